/**
 * No signal is lost to timing: a signal accepted by `POST /jobs/{id}/signals/{name}` is either
 * returned by the job's wait, or was sent after the wait recorded its timeout, and the answer
 * says which (`late`). The hard case is a wait that has a second or less left: it is waited out
 * inside the attempt, so the job is `running` (no wake can reach it) while a signal lands. On the
 * in-memory ports; test/integration/workflow-signal-timing.test.ts runs the same on DynamoDB Local.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { SignalsService } from '../../shared/api/signals-service';
import { defineJobType } from '../../shared/core/job-type';
import { inboxKey, type JournalRecord, journalKey } from '../../shared/core/journal';
import { incarnationOf } from '../../shared/core/table';
import type { JobContext } from '../../shared/runtime/job-definition';
import { echoJob, harness, redelivery, signalsOf } from './worker-harness';

const HOUR = 3_600_000;

/** `echo` with a timeout long enough for a wait of a second inside the attempt. */
const spec = defineJobType({
  type: 'echo',
  payload: z.object({ n: z.number() }),
  timeoutMs: 30_000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
});

function setup(run: (payload: unknown, ctx: JobContext) => Promise<unknown>) {
  const h = harness({ spec, run });
  const signals = signalsOf(h);
  /** Runs `around(record)` in place of the journal's record of the wait's timeout, once. */
  const aroundTimeout = (around: (record: () => Promise<unknown>) => Promise<unknown>) => {
    const record = h.journal.record.bind(h.journal);
    let done = false;
    h.journal.record = (async (input: JournalRecord) => {
      const timeout = input.kind === 'signal' && (input.value as { timedOutAt?: string }).timedOutAt !== undefined;
      if (!timeout || done) return record(input);
      done = true;
      return around(() => record(input));
    }) as typeof h.journal.record;
  };
  return { h, signals, aroundTimeout };
}

/** Waits for `paid` (the timeout given), then returns what it got. */
const waiter = (timeout: number | string) => async (_p: unknown, ctx: JobContext) => ({
  got: await ctx.waitForSignal('paid', { timeout }),
});

describe('a signal sent in a wait’s last second', () => {
  it('is returned by the wait waited out in the attempt, not null; the send answers neither resumed nor late', async () => {
    const { h, signals } = setup(waiter(600)); // 600 ms: waited out in the attempt
    let deadlineRecorded = () => {};
    const recorded = new Promise<void>((resolve) => {
      deadlineRecorded = resolve;
    });
    const record = h.journal.record.bind(h.journal);
    h.journal.record = async (input) => {
      const out = await record(input);
      if (input.kind === 'wait') deadlineRecorded();
      return out;
    };
    h.store.seed(echoJob('lt-1'));
    const running = h.worker(redelivery('lt-1'));
    await recorded; // the wait looked at its inbox, recorded its deadline, and waits it out here
    const sent = await signals.send('lt-1', 'paid', { payload: { amount: 7 } });
    expect(h.store.peek('lt-1')?.state).toBe('running');
    await running;
    expect(h.store.peek('lt-1')).toMatchObject({ state: 'succeeded', result: { got: { amount: 7 } } });
    expect(sent).toMatchObject({ created: true, receipt: { resumed: false, late: false, duplicate: false } });
  });

  it('is returned when it is stored after the wait’s last look at its inbox, just before its timeout is recorded', async () => {
    const { h, signals, aroundTimeout } = setup(waiter(300));
    let sent: Awaited<ReturnType<SignalsService['send']>> | undefined;
    aroundTimeout(async (record) => {
      sent = await signals.send('lt-2', 'paid', { payload: 'in time' });
      return record();
    });
    h.store.seed(echoJob('lt-2'));
    await h.worker(redelivery('lt-2'));
    expect(h.store.peek('lt-2')).toMatchObject({ state: 'succeeded', result: { got: 'in time' } });
    expect(sent).toMatchObject({ created: true, receipt: { resumed: false, late: false } });
  });

  it('answers late when it is stored just after the timeout was recorded, and the wait returns null', async () => {
    const { h, signals, aroundTimeout } = setup(waiter(300));
    let sent: Awaited<ReturnType<SignalsService['send']>> | undefined;
    aroundTimeout(async (record) => {
      const out = await record();
      sent = await signals.send('lt-3', 'paid', { payload: 'too late' });
      return out;
    });
    h.store.seed(echoJob('lt-3'));
    await h.worker(redelivery('lt-3'));
    expect(sent).toMatchObject({ created: true, receipt: { resumed: false, late: true, duplicate: false } });
    expect(h.store.peek('lt-3')).toMatchObject({ state: 'succeeded', result: { got: null } });
  });
});

describe('what a send answers', () => {
  it('late, after a wait that timed out while the job went on; its replay too; the job is not woken', async () => {
    const { h, signals } = setup(async (_p, ctx) => {
      const got = await ctx.waitForSignal('paid', { timeout: '2h' });
      await ctx.sleep('after', '1h');
      return { got };
    });
    h.store.seed(echoJob('lt-4'));
    await h.worker(redelivery('lt-4'));
    expect(h.store.peek('lt-4')).toMatchObject({ state: 'waiting', waitSignal: 'paid' });
    h.clock.advance(2 * HOUR);
    await h.worker(redelivery('lt-4')); // the wait times out; the job sleeps
    expect(h.store.peek('lt-4')).toMatchObject({ state: 'waiting', waitingFor: { kind: 'sleep', key: 'after' } });
    const sent = await signals.send('lt-4', 'paid', { payload: 1 });
    expect(sent).toMatchObject({ created: true, receipt: { resumed: false, late: true, duplicate: false } });
    expect(await signals.send('lt-4', 'paid', { payload: 1 })).toMatchObject({
      created: false,
      receipt: { resumed: false, late: true, duplicate: true },
    });
    expect(h.store.peek('lt-4')).toMatchObject({
      state: 'waiting',
      runAt: new Date(h.clock.now() + HOUR).toISOString(),
    });
    h.clock.advance(HOUR);
    await h.worker(redelivery('lt-4'));
    expect(h.store.peek('lt-4')).toMatchObject({ state: 'succeeded', result: { got: null } });
  });

  it('resumed, to a job waiting for it; and its replay', async () => {
    const { h, signals } = setup(waiter('1d'));
    h.store.seed(echoJob('lt-5'));
    await h.worker(redelivery('lt-5'));
    expect(await signals.send('lt-5', 'paid', { payload: 5 })).toMatchObject({
      created: true,
      receipt: { resumed: true, late: false, duplicate: false },
    });
    expect(await signals.send('lt-5', 'paid', { payload: 5 })).toMatchObject({
      receipt: { resumed: true, late: false, duplicate: true },
    });
    const before = h.journal.calls.length;
    await h.worker(redelivery('lt-5'));
    expect(h.store.peek('lt-5')).toMatchObject({ state: 'succeeded', result: { got: 5 } });
    // the resumed run loads its journal (the outcome the send recorded), and reads the inbox for
    // its payload: no write
    const inc = incarnationOf(h.store.peek('lt-5')?.createdAt ?? '');
    expect(h.journal.calls.slice(before)).toEqual([
      { method: 'load', key: journalKey({ jobId: 'lt-5', incarnation: inc }, 'signal', '').pk },
      { method: 'signal', key: `${inboxKey({ jobId: 'lt-5', incarnation: inc }, 'paid').pk}/paid` },
    ]);
  });

  it('neither, before the job waits: the wait returns it when it comes', async () => {
    const { h, signals } = setup(waiter('1d'));
    h.store.seed(echoJob('lt-6'));
    expect(await signals.send('lt-6', 'paid', { payload: 6 })).toMatchObject({
      created: true,
      receipt: { resumed: false, late: false, duplicate: false },
    });
    await h.worker(redelivery('lt-6'));
    expect(h.store.peek('lt-6')).toMatchObject({ state: 'succeeded', result: { got: 6 } });
  });
});
