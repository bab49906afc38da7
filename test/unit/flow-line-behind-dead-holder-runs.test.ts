/**
 * Lost jobs, before the fix: only the FIRST job in line reclaimed a slot from a dead holder. When
 * the head of the line will never come back (cancelled while it waited; likewise an orphaned
 * ticket, or the older ticket of a job that took a second one) and the slot is full of holders
 * that will never give it back, no one reclaimed: every job behind waited forever. Now any job in
 * line that sees a suspect holder looks at it.
 *
 * Here the dead holder is a job cancelled while it waited and then handed the slot, whose wake
 * was never sent (the admit's response was lost: an accepted "cost only" case), and the next
 * head is also cancelled.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { cancelledJob } from '../../shared/core/control';
import type { Job } from '../../shared/core/job';
import { defineJobType } from '../../shared/core/job-type';
import { DependencyError } from '../../shared/errors';
import { sqsEvent } from '../support/fakes';
import { echoJob, harness, messageFor } from './worker-harness';

const spec = defineJobType({
  type: 'echo',
  payload: z.object({ n: z.number(), tenant: z.string() }),
  timeoutMs: 1000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
  concurrency: [{ limit: 1, key: (p) => p.tenant }],
});
const slot = { scope: 'echo#0', key: 't1', limit: 1 };
const job = (id: string) => echoJob(id, { payload: { n: 1, tenant: 't1' }, flowKeys: ['t1'] });
const tick = () => new Promise((r) => setTimeout(r, 1));

describe('flow: a line whose head never comes back, behind a dead holder', () => {
  it('runs the jobs behind two cancelled waiters after a hand-on’s wake is lost', async () => {
    const open = new Map<string, () => void>();
    const h = harness({
      spec,
      run: (async (_p: unknown, ctx: { jobId: string }) => {
        if (ctx.jobId === 'a') await new Promise<void>((r) => open.set('a', r));
        return 'ok';
      }) as never,
    });
    for (const id of ['a', 'w0', 'w1', 'w2', 'n']) h.store.seed(job(id));
    const da = h.worker(sqsEvent(messageFor('a')));
    while (!open.has('a')) await tick();
    for (const id of ['w0', 'w1', 'w2']) await h.worker(sqsEvent(messageFor(id))); // tickets 0, 1, 2
    expect(await h.flow.state(slot)).toMatchObject({ holders: [{ jobId: 'a' }], waiting: 3 });

    // w0 and w1 are cancelled while they wait (the supervisor follows them no more)
    const now = h.clock.now();
    for (const id of ['w0', 'w1']) {
      h.store.seed(cancelledJob(h.store.peek(id) as Job, { now, expiresAt: Math.floor(now / 1000) + 86_400 }));
    }
    // a ends; its admit hands w0 the slot, but the response is lost: the retry finds the slot full
    const admit = h.flow.admit.bind(h.flow);
    let lost = false;
    h.flow.admit = async (input) => {
      const out = await admit(input);
      if (!lost) {
        lost = true;
        throw new DependencyError('DynamoDB UpdateItem (flow admit): socket hang up');
      }
      return out;
    };
    open.get('a')?.();
    await da;
    expect(h.store.peek('a')?.state).toBe('succeeded');

    // from now on only the living jobs' messages come: w2's (the supervisor resends it), a newcomer's
    for (let round = 0; round < 5; round++) {
      h.clock.advance(15 * 60_000);
      await h.worker(sqsEvent(messageFor('w2', { messageId: `m-w2-${round}` })));
      await h.worker(sqsEvent(messageFor('n', { messageId: `m-n-${round}` })));
    }
    // a slot held by a cancelled job, a line headed by a cancelled job: w2 and n still run
    expect(h.store.peek('w2')?.state).toBe('succeeded');
    expect(h.store.peek('n')?.state).toBe('succeeded');
    expect(await h.flow.state(slot)).toMatchObject({ holders: [], waiting: 0 });
  });
});
