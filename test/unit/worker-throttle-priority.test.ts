/**
 * A throttle's line in the worker, for a type with priorities, on in-memory ports (FakePacer passes
 * the same contract as DynamoPacer): a job with no free turn waits in line under its rank, a free
 * turn goes to the best-ranked job (the one that finds another first sends it its message), and
 * an entry whose job will not come is taken out.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { paceView } from '../../shared/api/pace-view';
import type { Job } from '../../shared/core/job';
import { defineJobType, type JobTypeSpec } from '../../shared/core/job-type';
import { LINE_HAND_ON_GRACE_MS } from '../../shared/core/pace';
import { jobRank } from '../../shared/core/priority';
import { newJob, sqsEvent } from '../support/fakes';
import { harness, logged, messageFor, T0 } from './worker-harness';

const payload = z.object({ n: z.number() });
// one start per 2 s for the type, priorities 0–10
const spec = defineJobType({
  type: 'echo',
  payload,
  timeoutMs: 1000,
  throttle: { limit: 1, periodSeconds: 2 },
  priority: { default: 0, agingSeconds: 30 },
}) as JobTypeSpec;
const iso = (ms: number) => new Date(ms).toISOString();
const job = (id: string, priority: number) =>
  newJob({ id, type: 'echo', payload: { n: 1 }, priority, runAt: iso(T0), throttleKey: '*' }, T0);

/** A worker of the type whose handler notes each job it starts. */
function recording() {
  const started: string[] = [];
  const h = harness({
    spec,
    run: async (_p, ctx) => {
      started.push(ctx.jobId);
      return 'ok';
    },
  });
  return { h, started };
}

describe('worker: a throttle with priorities', () => {
  it('serves the turns by rank, not by arrival: a later high-priority job passes the low ones waiting', async () => {
    const { h, started } = recording();
    for (const [id, p] of [
      ['first', 0],
      ['low1', 0],
      ['low2', 0],
      ['high', 9],
    ] as const)
      h.store.seed(job(id, p));
    await h.worker(sqsEvent(messageFor('first')));
    expect(started).toEqual(['first']);
    // no turn free: each waits in line under its rank, hidden about until its turn
    for (const id of ['low1', 'low2']) {
      const out = await h.worker(sqsEvent(messageFor(id)));
      expect(out.batchItemFailures).toEqual([{ itemIdentifier: `m-${id}` }]);
      expect(h.store.peek(id)?.waitingFor).toMatchObject({
        kind: 'throttle',
        key: '*',
        rank: jobRank({ agingSeconds: 30 }, h.store.peek(id) as never),
      });
    }
    expect(h.queue.visibility.map((v) => v.seconds)).toEqual([2, 4]);
    // the high-priority job comes last, and waits behind them by its estimate only
    await h.worker(sqsEvent(messageFor('high')));
    expect((await h.pacer.line({ scope: 'echo~t', key: '*', max: 10 })).map((e) => e.jobId)).toEqual([
      'high',
      'low1',
      'low2',
    ]);
    // the key view lists the line in that order, with the time each rank stands for
    const view = await paceView(h.pacer, spec, 'throttle', '*', h.clock.now());
    expect(view?.line).toEqual([
      { jobId: 'high', rankedAt: iso(T0 - 9 * 30_000) },
      { jobId: 'low1', rankedAt: iso(T0) },
      { jobId: 'low2', rankedAt: iso(T0) },
    ]);
    // high is first in line: its estimate is the next turn, as low1's is. low1's message comes
    // back: the turn is free, but high is first, and its own message is due now: low1 waits on
    h.clock.set(T0 + 2000);
    const sent = h.queue.sent.length;
    await h.worker(sqsEvent(messageFor('low1', { messageId: 'm-low1-back' })));
    expect(started).toEqual(['first']);
    expect(h.queue.sent.length).toBe(sent);
    // high's message comes back: it takes the turn, and sends low1 (first now) its message
    await h.worker(sqsEvent(messageFor('high', { messageId: 'm-high-back' })));
    expect(started).toEqual(['first', 'high']);
    expect(h.store.peek('high')?.waitingFor).toBeUndefined();
    expect(h.queue.sent.slice(sent).map((s) => s.message)).toEqual([expect.objectContaining({ id: 'low1' })]);
    // then low1, then low2, one turn each
    h.clock.set(T0 + 4000);
    await h.worker(sqsEvent(messageFor('low2', { messageId: 'm-low2-back' }))); // low1 is first: low2 waits on
    await h.worker(sqsEvent(messageFor('low1', { messageId: 'm-low1-woken' })));
    h.clock.set(T0 + 6000);
    await h.worker(sqsEvent(messageFor('low2', { messageId: 'm-low2-again' })));
    expect(started).toEqual(['first', 'high', 'low1', 'low2']);
    expect(await h.pacer.line({ scope: 'echo~t', key: '*', max: 10 })).toEqual([]);
  });

  it('takes out of the line the entry of a job that will not come (cancelled), and the next job takes the turn', async () => {
    const { h, started } = recording();
    for (const [id, p] of [
      ['first', 0],
      ['low', 0],
      ['gone', 9],
    ] as const)
      h.store.seed(job(id, p));
    await h.worker(sqsEvent(messageFor('first')));
    await h.worker(sqsEvent(messageFor('low')));
    await h.worker(sqsEvent(messageFor('gone')));
    // the high-priority job is cancelled while it waits: its entry stays until someone finds it
    h.store.seed({ ...(h.store.peek('gone') as Job), state: 'cancelled' });
    // low comes back once the turn has been free for longer than the grace (gone's message
    // never comes): gone is first, and will not come: low takes its entry out, and the turn
    h.clock.set(T0 + 2001 + LINE_HAND_ON_GRACE_MS);
    const sent = h.queue.sent.length;
    await h.worker(sqsEvent(messageFor('low', { messageId: 'm-low-back' })));
    expect(started).toEqual(['first', 'low']);
    expect(h.queue.sent.length).toBe(sent); // nobody to wake
    expect(await h.pacer.line({ scope: 'echo~t', key: '*', max: 10 })).toEqual([]);
    // the line says which line the job left, and under which rank (the chaos run's invariant 17 reads it)
    expect(logged(h.logs, 'took out of its throttle line a job that will not come')).toEqual([
      expect.objectContaining({
        jobId: 'gone',
        scope: 'echo~t',
        key: '*',
        rank: jobRank(spec.priority ?? {}, h.store.peek('gone') as Job),
      }),
    ]);
  });
});
