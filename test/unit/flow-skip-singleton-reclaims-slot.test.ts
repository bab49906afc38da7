/**
 * Before the fix, a `skip` singleton never reclaimed a slot its holder did not give back.
 *
 * In `queue` (and `cancel-running`) mode a holder that will never give its place back (finished,
 * gone) is freed by the first job in line (`reclaim`). A `skip` job takes no ticket: on `busy` it
 * is skipped at once, and nothing ever looks at the holder. So one slot left behind by a finished
 * job turns every later job of that key into `skipped` ("by" the finished job), forever, although
 * the key is free.
 *
 * One way a slot was left behind, with a single transient fault: the worker's read after the
 * attempt failed, so `gate.leave` was never called; the message was deleted and nothing
 * redelivered it. Now the worker gives the slot back anyway (under its token; an attempt that
 * wrote its end makes no such read at all), and a skip looks at the holder it finds (one read):
 * a finished or gone holder is freed. Both parts failed before.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJobType, type JobTypeSpec } from '../../shared/core/job-type';
import { newJob, sqsEvent } from '../support/fakes';
import { harness, messageFor, T0 } from './worker-harness';

const spec = defineJobType({
  type: 'echo',
  payload: z.object({ n: z.number(), acct: z.string() }),
  timeoutMs: 1000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
  singleton: { key: (p) => p.acct, mode: 'skip' },
});
const job = (id: string) => newJob({ id, type: 'echo', payload: { n: 1, acct: 'a1' }, singletonKey: 'a1' }, T0);

describe('flow: a skip singleton with a holder that never gave its slot back', () => {
  it('does not skip jobs of a key whose only holder finished long ago', async () => {
    const started: string[] = [];
    const h = harness({
      spec: spec as JobTypeSpec,
      run: (async (_p: unknown, ctx: { jobId: string }) => {
        started.push(ctx.jobId);
        return 'ok';
      }) as never,
    });
    h.store.seed(job('a'));
    expect(await h.worker(sqsEvent(messageFor('a')))).toEqual({ batchItemFailures: [] }); // message deleted
    expect(h.store.peek('a')?.state).toBe('succeeded');
    // a finished, and gave its slot back
    expect((await h.flow.state({ scope: '@echo', key: 'a1' })).holders).toEqual([]);
    // a slot left behind another way: a worker that died between its last write and the release
    await h.flow.acquire({
      slot: { scope: '@echo', key: 'a1', limit: 1 },
      jobId: 'a',
      type: 'echo',
      now: T0,
      token: 1,
    });

    // A day later, new jobs of the key arrive one at a time: the key is free (a ended a day ago)
    for (const id of ['b', 'c']) {
      h.clock.advance(24 * 3600_000);
      h.store.seed({
        ...job(id),
        createdAt: new Date(h.clock.now()).toISOString(),
        runAt: new Date(h.clock.now()).toISOString(),
      });
      await h.worker(sqsEvent(messageFor(id)));
    }
    // Before the fix: both ended `skipped`, "by" the long-finished a, and never ran
    expect(h.store.peek('b')?.skipReason).toBeUndefined();
    expect(h.store.peek('c')?.skipReason).toBeUndefined();
    expect(started).toEqual(['a', 'b', 'c']);
  });
});
