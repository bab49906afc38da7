/**
 * A cancelled attempt keeps running until its worker notices (next heartbeat, then up to one more
 * interval for the handler to stop): the job store keeps its lease for exactly that reason
 * (`cancelledJob`, `restartedJob`: "no later attempt may start while the cancelled one may still
 * run"). The flow gate honours that lease too: it frees the cancelled job's slot only once the
 * handler has stopped (its worker gives it back), so no other job of the key runs beside it.
 * Both cases failed before the fix (two handlers ran at once).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { cancelledJob, restartedJob } from '../../shared/core/control';
import type { Job } from '../../shared/core/job';
import { defineJobType } from '../../shared/core/job-type';
import { sqsEvent } from '../support/fakes';
import { heldHandlers } from '../support/held-handlers';
import { nextRunsAloneOnceHolderStops } from './flow-races-harness';
import { echoJob, harness, messageFor } from './worker-harness';

const spec = defineJobType({
  type: 'echo',
  payload: z.object({ n: z.number(), tenant: z.string() }),
  timeoutMs: 1000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
  concurrency: [{ limit: 1, key: (p) => p.tenant }],
});
const job = (id: string) => echoJob(id, { payload: { n: 1, tenant: 't1' }, flowKeys: ['t1'] });
const slot = { scope: 'echo#0', key: 't1' };
const tick = () => new Promise((r) => setTimeout(r, 1));
const tracked = () => heldHandlers();

describe('flow: a cancelled attempt that still runs keeps its slot', () => {
  it('the first job in line does not free the slot of a job cancelled mid-attempt while its handler runs', async () => {
    const g = tracked();
    const h = harness({ spec, run: g.run as never });
    h.store.seed(job('a'));
    h.store.seed(job('b'));
    const da = h.worker(sqsEvent(messageFor('a')));
    await g.until('a');
    // the operator cancels a: its lease stays (its worker notices at its next heartbeat, ~10 s)
    const now = h.clock.now();
    h.store.seed(cancelledJob(h.store.peek('a') as Job, { now, expiresAt: Math.floor(now / 1000) + 86_400 }));
    // b comes: no free slot, first in line: reclaim sees a cancelled, but its lease may still be held
    await h.worker(sqsEvent(messageFor('b')));
    expect((await h.flow.state(slot)).holders).toMatchObject([{ jobId: 'a', token: 1 }]);
    expect(h.queue.sent).toEqual([]);
    // a duplicate of a's message finds it finished: it must not give the slot back either
    await h.worker(sqsEvent(messageFor('a', { messageId: 'm-a-dup' })));
    expect((await h.flow.state(slot)).holders).toMatchObject([{ jobId: 'a', token: 1 }]);
    // b's message again (the supervisor's resend) while a still runs; then a stops
    await nextRunsAloneOnceHolderStops({ h, g, holderDone: da, holder: 'a', next: 'b', slot });
  });

  it('a restarted job whose claim is fenced (its cancelled attempt may still run) keeps the slot that attempt runs on', async () => {
    const g = tracked();
    const h = harness({ spec, run: g.run as never });
    h.store.seed(job('a'));
    h.store.seed(job('b'));
    const da = h.worker(sqsEvent(messageFor('a')));
    await g.until('a');
    // cancel, then operator retry: queued, due now, leaseExpiresAt kept (the claim is fenced)
    const now = h.clock.now();
    h.store.seed(cancelledJob(h.store.peek('a') as Job, { now, expiresAt: Math.floor(now / 1000) + 86_400 }));
    h.store.seed(restartedJob(h.store.peek('a') as Job, { now }));
    // the restart's message: the claim is fenced, and the slot stays the running attempt's
    await h.worker(sqsEvent(messageFor('a', { messageId: 'm-a-restart' })));
    expect(h.store.peek('a')?.state).toBe('queued'); // not claimed: fenced
    expect((await h.flow.state(slot)).holders).toMatchObject([{ jobId: 'a', token: 1 }]);
    // b must not find the slot free while a's cancelled attempt still runs
    const db = h.worker(sqsEvent(messageFor('b')));
    for (let i = 0; i < 50; i++) await tick();
    const peak = g.peak;
    g.release('a');
    g.release('b');
    await da;
    await db;
    expect(peak).toBe(1);
  });
});
