/**
 * The worker with a limit shared fairly (`fairBy`), on in-memory ports (the fake slots pass the
 * adapter's contract): a job that has to wait joins its fair key's line, and a freed place goes
 * to the key that runs fewest; keys of equal share take turns, so a key with a backlog does not
 * keep the place from a key that came after it.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJobType } from '../../shared/core/job-type';
import { sqsEvent } from '../support/fakes';
import { echoJob, gated, harness, messageFor, T0 } from './worker-harness';

const fairSpec = defineJobType({
  type: 'echo',
  payload: z.object({ n: z.number(), t: z.string() }),
  timeoutMs: 1000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
  concurrency: [{ limit: 1, fairBy: (p) => p.t }],
});

const job = (id: string, tenant: string, at: number) =>
  echoJob(id, { payload: { n: 1, t: tenant }, flowKeys: [tenant], runAt: new Date(at).toISOString() });

describe('worker: fair share', () => {
  it('takes turns between fair keys where oldest-first would run one key’s backlog first', async () => {
    const g = gated();
    const h = harness({ spec: fairSpec, run: g.run as never });
    h.store.seed(job('a0', 'a', T0));
    const first = h.worker(sqsEvent(messageFor('a0')));
    await g.until('a0');
    // a's backlog comes first, then b's: oldest first would run a1, a2, a3, b1, b2
    const waiting = [job('a1', 'a', T0 + 1), job('a2', 'a', T0 + 2), job('a3', 'a', T0 + 3)];
    waiting.push(job('b1', 'b', T0 + 4), job('b2', 'b', T0 + 5));
    for (const j of waiting) {
      h.store.seed(j);
      expect(await h.worker(sqsEvent(messageFor(j.id)))).toEqual({ batchItemFailures: [] });
      expect(h.store.peek(j.id)?.waitingFor).toMatchObject({ kind: 'concurrency', limit: 0, key: '*' });
    }
    expect(await h.flow.state({ scope: 'echo#0', key: '*' })).toMatchObject({
      waiting: 5,
      waitingByFairKey: { a: 3, b: 2 },
    });
    let current = 'a0';
    let run = first;
    for (const next of ['a1', 'b1', 'a2', 'b2', 'a3']) {
      h.clock.advance(1000);
      g.release(current);
      await run;
      expect(h.queue.sent.at(-1)?.message).toMatchObject({ id: next });
      // the wake names the job's tenant, as its first message did: on AWS, SQS fair queues let a
      // quiet tenant's wake pass a noisy tenant's backlog in the ready queue
      expect(h.queue.sent.at(-1)?.groupId).toBe(`echo:${next.slice(0, 1)}`);
      run = h.worker(sqsEvent(messageFor(next, { messageId: `m-${next}-2` })));
      await g.until(next);
      current = next;
    }
    g.release(current);
    await run;
    expect(g.started).toEqual(['a0', 'a1', 'b1', 'a2', 'b2', 'a3']);
    expect(await h.flow.state({ scope: 'echo#0', key: '*' })).toMatchObject({ holders: [], waiting: 0 });
    // a wait costs what a ranked line's does: one join and one admission
    expect(h.flow.writes).toMatchObject({ join: 5, 'admit-ranked': 5 });
  });
});
