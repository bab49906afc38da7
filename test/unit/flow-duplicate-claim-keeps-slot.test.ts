/**
 * Two deliveries of one job's message race: both read it queued and enter its slot for attempt 1
 * (one entry, `{ t: 1 }`, shared by both); one claims it and runs. The other's claim lands once
 * the running attempt has been cancelled (a `cancel-running` singleton of the key; in the system
 * chaos run, an SDK retry of the claim after a throttled answer): it is refused as `finished`, and
 * the worker took the entry under token 1 for this delivery's own and gave it back, so the job in
 * line was admitted and started while the cancelled handler still ran.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJobType, type JobTypeSpec } from '../../shared/core/job-type';
import { newJob, sqsEvent } from '../support/fakes';
import { heldHandlers } from '../support/held-handlers';
import { nextRunsAloneOnceHolderStops } from './flow-races-harness';
import { harness, messageFor, T0 } from './worker-harness';

const spec = defineJobType({
  type: 'echo',
  payload: z.object({ n: z.number(), acct: z.string() }),
  timeoutMs: 1000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
  singleton: { key: (p) => p.acct, mode: 'cancel-running', scope: 'sys-one' },
});
const job = (id: string) => newJob({ id, type: 'echo', payload: { n: 1, acct: 'a1' }, singletonKey: 'a1' }, T0);
const tick = () => new Promise((r) => setTimeout(r, 1));

describe('flow: a duplicate delivery whose claim finds the running attempt cancelled', () => {
  it('does not give back the slot that attempt still runs on', async () => {
    const g = heldHandlers();
    const h = harness({ spec: spec as JobTypeSpec, run: g.run as never });
    h.store.seed(job('a'));
    h.store.seed(job('b'));
    const slot = { scope: '@sys-one', key: 'a1' };

    // The duplicate's claim is held back until the test lets it go (a slow, retried call).
    const claim = h.store.claim.bind(h.store);
    let letDuplicateClaim = () => {};
    const duplicateClaims = new Promise<void>((resolve) => {
      letDuplicateClaim = resolve;
    });
    let duplicateAtClaim = false;
    h.store.claim = async (input) => {
      if (input.messageId === 'm-a-dup') {
        duplicateAtClaim = true;
        await duplicateClaims;
      }
      return claim(input);
    };

    // The duplicate reads a queued, enters its slot for attempt 1, and is at its claim.
    const dup = h.worker(sqsEvent(messageFor('a', { messageId: 'm-a-dup' })));
    for (let i = 0; i < 1000 && !duplicateAtClaim; i++) await tick();
    expect(duplicateAtClaim).toBe(true);
    // The other delivery enters too (the same entry, token 1), claims attempt 1 and runs.
    const da = h.worker(sqsEvent(messageFor('a')));
    await g.until('a');
    expect(h.store.peek('a')).toMatchObject({ state: 'running', leaseToken: 1 });

    // b (cancel-running) cancels a and waits: a's handler goes on until its next heartbeat.
    await h.worker(sqsEvent(messageFor('b')));
    expect(h.store.peek('a')?.state).toBe('cancelled');
    expect(h.store.peek('b')?.waitingFor).toMatchObject({ kind: 'singleton', key: 'a1' });

    // The duplicate's claim lands now: refused, the job is finished (cancelled).
    letDuplicateClaim();
    await dup;
    // a's cancelled attempt still runs: its slot stays its own, and b is not handed it.
    expect((await h.flow.state(slot)).holders).toMatchObject([{ jobId: 'a', token: 1 }]);
    expect(h.queue.sent.map((s) => s.message.id)).toEqual([]);
    // b's message again (a resend) while a's handler runs: b must not start beside it; once a's
    // handler stops, its worker hands the slot to b, which then runs alone.
    await nextRunsAloneOnceHolderStops({ h, g, holderDone: da, holder: 'a', next: 'b', slot });
  });

  it('still gives back an entry it made when the attempt it raced has ended (no lease left)', async () => {
    const g = heldHandlers();
    const h = harness({ spec: spec as JobTypeSpec, run: g.run as never });
    h.store.seed(job('a'));
    const slot = { scope: '@sys-one', key: 'a1' };

    // The duplicate reads a queued, then its acquire is held back until the other delivery is done.
    const acquire = h.flow.acquire.bind(h.flow);
    let letAcquire = () => {};
    const acquires = new Promise<void>((resolve) => {
      letAcquire = resolve;
    });
    let held = false;
    h.flow.acquire = async (input) => {
      if (!held) {
        held = true;
        await acquires;
      }
      return acquire(input);
    };
    const dup = h.worker(sqsEvent(messageFor('a', { messageId: 'm-a-dup' })));
    for (let i = 0; i < 1000 && !held; i++) await tick();
    // The other delivery runs attempt 1 to its end and gives its slot back.
    const da = h.worker(sqsEvent(messageFor('a')));
    await g.until('a');
    g.release('a');
    await da;
    expect(h.store.peek('a')?.state).toBe('succeeded');
    expect((await h.flow.state(slot)).holders).toEqual([]);
    // The duplicate's acquire now makes the entry anew (token 1); its claim is refused: finished.
    letAcquire();
    await dup;
    expect(await h.flow.state(slot)).toMatchObject({ holders: [], waiting: 0 });
    expect(g.peak).toBe(1);
  });
});
