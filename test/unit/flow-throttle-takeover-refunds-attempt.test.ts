/**
 * Before the fix, the post-claim throttle turn "gave the attempt back" with `store.retry`, but the
 * claim had already counted the attempt (`attempts + 1`) and `retry` kept it. A takeover (a dead
 * worker's job) was never paced before its claim (only `due` jobs were), so every takeover on a
 * busy throttle key took this path. Now a takeover takes its turn before its claim, and a give-back
 * refunds the attempt (`retry({ refund: true })`). When the taken-over attempt was the last one allowed, the job is left
 * `retrying` with `attempts == maxAttempts`: every later claim was refused, classified `missing`,
 * and the message dropped (the supervisor's resends met the same). The job never ran again and
 * never ended: a lost job.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJobType, type JobTypeSpec } from '../../shared/core/job-type';
import { newJob, sqsEvent } from '../support/fakes';
import { harness, messageFor, T0 } from './worker-harness';

const spec = defineJobType({
  type: 'echo',
  payload: z.object({ n: z.number(), api: z.string() }),
  timeoutMs: 1000,
  retry: { maxAttempts: 2, backoff: { kind: 'constant', delayMs: 2000 } },
  throttle: { limit: 1, periodSeconds: 2, key: (p) => p.api },
});
const job = (id: string) =>
  newJob({ id, type: 'echo', payload: { n: 1, api: 'k1' }, throttleKey: 'k1', maxAttempts: 2 }, T0);
const iso = (ms: number) => new Date(ms).toISOString();

describe('flow: a takeover on a busy throttle key', () => {
  it('runs (or ends) a job whose worker died on its next-to-last attempt', async () => {
    const started: string[] = [];
    const h = harness({
      spec: spec as JobTypeSpec,
      run: (async (_p: unknown, ctx: { jobId: string }) => {
        started.push(ctx.jobId);
        return 'ok';
      }) as never,
    });
    // x's attempt 1 ran on a worker that died 10 minutes ago (lease long expired)
    h.store.seed({
      ...job('x'),
      state: 'running',
      attempts: 1,
      leaseToken: 1,
      leaseOwner: 'dead-worker',
      leaseExpiresAt: T0 - 600_000,
      leaseMessage: 'm-x',
      startedAt: iso(T0 - 630_000),
    });
    // another job of the key has just started: the key's next turn is 2 s away
    h.store.seed(job('a'));
    await h.worker(sqsEvent(messageFor('a')));
    expect(started).toEqual(['a']);

    // x's message comes back: takeover (no turn before the claim), claim = attempt 2 of 2, the
    // post-claim turn is later, the attempt is "given back" with store.retry
    await h.worker(sqsEvent(messageFor('x', { receiveCount: 2 })));
    // Before a fix: x is now { state: 'retrying', attempts: 2, maxAttempts: 2 }, and never ran attempt 2

    // let the key's turns pass and deliver x again a few times (SQS returns, supervisor resends)
    for (let i = 0; i < 4; i++) {
      h.clock.advance(5_000);
      await h.worker(sqsEvent(messageFor('x', { messageId: `m-x-${i}`, receiveCount: 1 })));
    }
    expect(h.store.peek('x')).toMatchObject({ state: 'succeeded' }); // before a fix: retrying, 2 of 2, forever
    expect(started).toEqual(['a', 'x']);
  });
});
