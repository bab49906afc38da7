/**
 * Before the fix, reclaim (and leaveIfHeld) freed a finished holder's slot with an unconditional
 * release (any attempt's entry). Between the read that finds the holder finished and that
 * release, an operator retry restarts the job and its next delivery takes the entry over (token
 * 2) and runs: the release then freed the slot of a running attempt, and the waiter was admitted
 * beside it. Now the release names the token it read.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { restartedJob } from '../../shared/core/control';
import type { Job } from '../../shared/core/job';
import { defineJobType } from '../../shared/core/job-type';
import { sqsEvent } from '../support/fakes';
import { heldHandlers } from '../support/held-handlers';
import { echoJob, harness, messageFor, T0 } from './worker-harness';

const spec = defineJobType({
  type: 'echo',
  payload: z.object({ n: z.number(), tenant: z.string() }),
  timeoutMs: 1000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
  concurrency: [{ limit: 1, key: (p) => p.tenant }],
});
const slot = { scope: 'echo#0', key: 't1', limit: 1 };
const job = (id: string, o = {}) => echoJob(id, { payload: { n: 1, tenant: 't1' }, flowKeys: ['t1'], ...o });
const tick = () => new Promise((r) => setTimeout(r, 1));
const tracked = () => heldHandlers();

describe('flow: reclaim releases under the token it read', () => {
  it('does not free the slot of a job restarted (and running again) between reclaim’s read and its release', async () => {
    const g = tracked();
    const h = harness({ spec, run: g.run as never });
    // j failed and its worker never gave the slot back (leave failed after its retries); b is new
    h.store.seed(job('j', { state: 'failed', attempts: 3, leaseToken: 1, finishedAt: new Date(T0).toISOString() }));
    h.store.seed(job('b'));
    await h.flow.acquire({ slot, jobId: 'j', type: 'echo', now: T0, token: 1 });

    const get = h.store.get.bind(h.store);
    let raced = false;
    let dj: Promise<unknown> | undefined;
    h.store.get = async (id: string) => {
      const seen = await get(id);
      if (id === 'j' && !raced) {
        // reclaim (run by b, first in line) has read j: failed. Now the operator retries j and
        // j's message comes: it takes its entry over for attempt 2 and runs.
        raced = true;
        h.store.seed(restartedJob(h.store.peek('j') as Job, { now: h.clock.now() }));
        dj = h.worker(sqsEvent(messageFor('j', { messageId: 'm-j-restart' })));
        await g.until('j');
      }
      return seen;
    };
    await h.worker(sqsEvent(messageFor('b'))); // waits, reclaims: releases j's entry (token 2) and admits b
    const db = h.worker(sqsEvent(messageFor('b', { messageId: 'm-b-wake' })));
    for (let i = 0; i < 50; i++) await tick();
    const peak = g.peak;
    g.release('j');
    g.release('b');
    await dj;
    await db;
    expect(peak).toBe(1);
  });
});
