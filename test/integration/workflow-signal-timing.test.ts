/**
 * On DynamoDB Local: no signal is lost to timing. A signal accepted by
 * `POST /jobs/{id}/signals/{name}` is either returned by the job's wait, or was sent after the
 * wait recorded its timeout, and the answer says which (`late`), including a signal sent while a
 * wait with a second or less left is waited out inside the attempt. (The same on the in-memory
 * ports: test/unit/workflow-signal-timing.test.ts.)
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJobType } from '../../shared/core/job-type';
import type { JournalRecord } from '../../shared/core/journal';
import type { JobContext } from '../../shared/runtime/job-definition';
import { useJobTable } from '../local-aws/job-table';
import { dynamoWorker } from './workflow-worker-harness';

const { dynamo, tableName } = useJobTable('signal-timing');

const spec = defineJobType({
  type: 'payment-wait',
  payload: z.object({}),
  timeoutMs: 30_000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
});

function setup(run: (payload: unknown, ctx: JobContext) => Promise<unknown>) {
  const h = dynamoWorker({ dynamo, tableName, spec, run });
  const record = h.journal.record.bind(h.journal);
  /** Runs `around(record)` in place of the journal's record of the wait's timeout, once. */
  const aroundTimeout = (around: (record: () => Promise<unknown>) => Promise<unknown>) => {
    let done = false;
    h.journal.record = (async (input: JournalRecord) => {
      const timeout = input.kind === 'signal' && (input.value as { timedOutAt?: string }).timedOutAt !== undefined;
      if (!timeout || done) return record(input);
      done = true;
      return around(() => record(input));
    }) as typeof h.journal.record;
  };
  /** Resolves once the wait's deadline is recorded: it has looked at its inbox, and waits. */
  const deadlineRecorded = new Promise<void>((resolve) => {
    h.journal.record = async (input) => {
      const out = await record(input);
      if (input.kind === 'wait') resolve();
      return out;
    };
  });
  return { h, aroundTimeout, deadlineRecorded };
}

const waiter = (timeout: number | string) => async (_p: unknown, ctx: JobContext) => ({
  got: await ctx.waitForSignal('paid', { timeout }),
});

describe('no signal is lost to timing, on DynamoDB Local', () => {
  it('a signal sent while a wait’s last second is waited out in the attempt is returned; 202, neither resumed nor late', async () => {
    const { h, deadlineRecorded } = setup(waiter(800));
    await h.create('st-1', { payload: {} });
    const running = h.deliver('st-1');
    await deadlineRecorded;
    const sent = await h.post('st-1', 'paid', { amount: 7 });
    expect((await h.store.get('st-1'))?.state).toBe('running');
    await running;
    expect(await h.store.get('st-1')).toMatchObject({ state: 'succeeded', result: { got: { amount: 7 } } });
    expect(sent).toMatchObject({ status: 202, body: { resumed: false, late: false, duplicate: false } });
  });

  it('a signal stored after the wait’s last look at its inbox, before its timeout is recorded, is returned', async () => {
    const { h, aroundTimeout } = setup(waiter(300));
    let sent: unknown;
    aroundTimeout(async (record) => {
      sent = await h.post('st-2', 'paid', 'in time');
      return record();
    });
    await h.create('st-2', { payload: {} });
    await h.deliver('st-2');
    expect(await h.store.get('st-2')).toMatchObject({ state: 'succeeded', result: { got: 'in time' } });
    expect(sent).toMatchObject({ status: 202, body: { resumed: false, late: false } });
  });

  it('a signal stored just after the timeout was recorded answers late; the wait returns null', async () => {
    const { h, aroundTimeout } = setup(waiter(300));
    let sent: unknown;
    aroundTimeout(async (record) => {
      const out = await record();
      sent = await h.post('st-3', 'paid', 'too late');
      return out;
    });
    await h.create('st-3', { payload: {} });
    await h.deliver('st-3');
    expect(sent).toMatchObject({ status: 202, body: { resumed: false, late: true, duplicate: false } });
    expect(await h.store.get('st-3')).toMatchObject({ state: 'succeeded', result: { got: null } });
  });

  it('a signal after a wait that timed out while the job went on answers late, as does its replay (200)', async () => {
    const { h } = setup(async (_p, ctx) => {
      const got = await ctx.waitForSignal('paid', { timeout: 1_500 });
      await ctx.sleep('after', '1h');
      return { got };
    });
    await h.create('st-4', { payload: {} });
    await h.deliver('st-4');
    expect(await h.store.get('st-4')).toMatchObject({ state: 'waiting', waitSignal: 'paid' });
    await sleep(1_600);
    await h.deliver('st-4'); // the wait is over: its timeout is recorded, and the job sleeps
    expect(await h.store.get('st-4')).toMatchObject({ state: 'waiting', waitingFor: { kind: 'sleep', key: 'after' } });
    expect(await h.post('st-4', 'paid', 1)).toMatchObject({
      status: 202,
      body: { resumed: false, late: true, duplicate: false },
    });
    expect(await h.post('st-4', 'paid', 1)).toMatchObject({
      status: 200,
      body: { resumed: false, late: true, duplicate: true },
    });
    expect(await h.store.get('st-4')).toMatchObject({ waitingFor: { kind: 'sleep', key: 'after' } });
  });

  it('a signal to a job waiting for it answers resumed; one before the job waits answers neither, and is returned', async () => {
    const { h } = setup(waiter('1d'));
    await h.create('st-5', { payload: {} });
    await h.deliver('st-5');
    expect(await h.post('st-5', 'paid', 5)).toMatchObject({
      status: 202,
      body: { resumed: true, late: false, duplicate: false },
    });
    await h.deliver('st-5');
    expect(await h.store.get('st-5')).toMatchObject({ state: 'succeeded', result: { got: 5 } });

    await h.create('st-6', { payload: {} });
    expect(await h.post('st-6', 'paid', 6)).toMatchObject({
      status: 202,
      body: { resumed: false, late: false, duplicate: false },
    });
    await h.deliver('st-6');
    expect(await h.store.get('st-6')).toMatchObject({ state: 'succeeded', result: { got: 6 } });
  });
});
