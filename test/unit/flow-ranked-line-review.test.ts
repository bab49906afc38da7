/**
 * Review of the ranked line (priorities) at the worker's level, on the in-memory ports (the fake
 * slots pass the adapter's contract). Each case is a path where the line loses its order or a
 * freed place is left unused while a job waits.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Job } from '../../shared/core/job';
import { defineJobType, type JobTypeSpec } from '../../shared/core/job-type';
import { jobRank } from '../../shared/core/priority';
import { DependencyError } from '../../shared/errors';
import { sqsEvent } from '../support/fakes';
import { echoJob, gated, harness, messageFor, rankedSpec, T0 } from './worker-harness';

const iso = (ms: number) => new Date(ms).toISOString();

const slot = { scope: 'echo#0', key: '*', limit: 1 };
const job = (id: string, priority: number, overrides: Partial<Job> = {}) =>
  echoJob(id, { priority, runAt: iso(T0), flowKeys: ['*'], ...overrides });

describe('ranked line: review', () => {
  it('keeps a job of a ranked type in the ranked line when it has to wait after its claim (no ticket ahead of every rank)', async () => {
    const ran: string[] = [];
    const h = harness({ spec: rankedSpec, run: async (_p, ctx) => ran.push(ctx.jobId) });
    // 'other' holds the only place; 'high' (priority 10) waits in the ranked line
    h.store.seed(job('other', 0, { state: 'running', attempts: 1, leaseToken: 1, leaseExpiresAt: T0 + 30_000 }));
    await h.flow.acquire({ slot, jobId: 'other', type: 'echo', now: T0, token: 1 });
    h.store.seed(job('high', 10));
    await h.worker(sqsEvent(messageFor('high')));
    expect(await h.flow.state(slot)).toMatchObject({ waiting: 1, issued: 0 });

    // 'a' (priority 0) is read running (a duplicate: no slot taken); by its claim its attempt has
    // ended in a retry due at once, so the claim succeeds and the slot is taken after it
    h.store.seed(job('a', 0, { state: 'running', attempts: 1, leaseToken: 1, leaseExpiresAt: T0 + 30_000 }));
    const get = h.store.get.bind(h.store);
    let changed = false;
    h.store.get = async (id: string) => {
      const seen = await get(id);
      if (id === 'a' && !changed) {
        changed = true;
        h.store.seed(job('a', 0, { state: 'retrying', attempts: 1, leaseToken: 1 }));
      }
      return seen;
    };
    await h.worker(sqsEvent(messageFor('a')));
    expect(ran).toEqual([]);
    // Broken: the claimed path enters without the job's rank, so 'a' takes a ticket of the
    // oldest-first line, which every admission serves before any ranked entry
    expect(await h.flow.state(slot)).toMatchObject({ waiting: 2, issued: 0 });
    await h.flow.release({ slot, jobId: 'other' });
    expect((await h.flow.admit({ slot, now: T0 })).map((x) => x.jobId)).toEqual(['high']);
  });

  it('hands on the place a skip singleton frees from a finished holder when a ranked entry waits', async () => {
    const spec = defineJobType({
      type: 'echo',
      payload: z.object({ n: z.number(), acct: z.string() }),
      timeoutMs: 1000,
      retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
      singleton: { key: (p) => p.acct, mode: 'skip' },
      priority: { default: 0 },
    });
    const key = { scope: '@echo', key: 'a1', limit: 1, singleton: 'skip' as const };
    const of = (id: string, overrides: Partial<Job> = {}) =>
      echoJob(id, { payload: { n: 1, acct: 'a1' }, singletonKey: 'a1', runAt: iso(T0), ...overrides });
    const h = harness({ spec: spec as JobTypeSpec });
    // 'holder' runs with the key
    h.store.seed(of('holder', { state: 'running', attempts: 1, leaseToken: 1, leaseExpiresAt: T0 + 30_000 }));
    await h.flow.acquire({ slot: key, jobId: 'holder', type: 'echo', now: T0, token: 1 });
    // a retry of 'r' is due: a retry is not skipped, it joins the ranked line
    h.store.seed(of('r', { state: 'retrying', attempts: 1, leaseToken: 1 }));
    await h.worker(sqsEvent(messageFor('r')));
    expect(await h.flow.state(key)).toMatchObject({ holders: [{ jobId: 'holder' }], waiting: 1 });
    // 'holder' succeeds, and its worker dies before it gives the key back
    h.store.seed(of('holder', { state: 'succeeded', attempts: 1, leaseToken: 1, finishedAt: iso(T0) }));

    // a new job of the key: busy; it frees the finished holder's place, is skipped (r waits)...
    h.store.seed(of('n'));
    await h.worker(sqsEvent(messageFor('n')));
    expect(h.store.peek('n')?.state).toBe('skipped');
    // ...and nobody hands the freed place to r: the key is free, r waits, no message is sent
    // (r's next chance is the supervisor's resend, 10 minutes to hours later)
    expect(await h.flow.state(key)).toMatchObject({ holders: [{ jobId: 'r' }], waiting: 0 });
    expect(h.queue.sent.map((s) => s.message.id)).toContain('r');
  });

  it("joins again under the job's current rank when the rank its waitingFor remembers is no longer in the line", async () => {
    const h = harness({ spec: rankedSpec });
    h.store.seed(job('holder', 0, { state: 'running', attempts: 1, leaseToken: 1, leaseExpiresAt: T0 + 30_000 }));
    await h.flow.acquire({ slot, jobId: 'holder', type: 'echo', now: T0, token: 1 });
    // k (due 10 minutes ago) waits in the line
    h.store.seed(job('k', 0, { runAt: iso(T0 - 10 * 60_000) }));
    await h.worker(sqsEvent(messageFor('k')));
    // j waited an hour ago under the rank of its runAt then; its entry was admitted and its place
    // given back (it was cancelled before it started), and an operator's retry has made it due now:
    // its waitingFor still names the old rank
    const old = jobRank({ agingSeconds: 30 }, { id: 'j', runAt: iso(T0 - 3600_000), priority: 0 });
    h.store.seed(
      job('j', 0, {
        runAt: iso(T0),
        waitingFor: { kind: 'concurrency', limit: 0, key: '*', rank: old, since: iso(T0 - 3600_000) },
      }),
    );
    await h.worker(sqsEvent(messageFor('j')));
    expect(await h.flow.state(slot)).toMatchObject({ waiting: 2 });
    await h.flow.release({ slot, jobId: 'holder' });
    // Broken: j joined again under its hour-old rank, and passes k, due 10 minutes before j
    // (in the oldest-first line, a ticket already passed gets a new one at the back)
    expect((await h.flow.admit({ slot, now: T0 })).map((x) => x.jobId)).toEqual(['k']);
  });

  it('hands the place on when the delivery kept for a failed hand-on comes again, though the job holds none any more', async () => {
    const g = gated(); // a runs until released
    const h = harness({ spec: rankedSpec, run: g.run as never });
    h.store.seed(job('a', 0));
    h.store.seed(job('b', 5));
    const running = h.worker(sqsEvent(messageFor('a')));
    await g.until('a');
    await h.worker(sqsEvent(messageFor('b')));
    expect(await h.flow.state(slot)).toMatchObject({ holders: [{ jobId: 'a' }], waiting: 1 });
    // a ends: its release is applied, then every try of its hand-on fails (DynamoDB unavailable)
    const admit = h.flow.admit.bind(h.flow);
    let failures = 4; // the first try and persist's three
    h.flow.admit = async (input) => {
      if (failures > 0) {
        failures -= 1;
        throw new DependencyError('DynamoDB Query (flow line) failed: ServiceUnavailable');
      }
      return admit(input);
    };
    g.release('a');
    // the worker keeps a's message, so that its next delivery finishes what was left
    expect((await running).batchItemFailures).toHaveLength(1);
    expect(h.store.peek('a')?.state).toBe('succeeded');
    expect(await h.flow.state(slot)).toMatchObject({ holders: [], waiting: 1 });
    await h.worker(sqsEvent(messageFor('a', { messageId: 'm-a-again' })));
    // Broken: leaveIfHeld gives back (and hands on) only the slots the job still holds; a holds
    // none, so nothing hands the free place to b, whose next chance is the supervisor's resend
    expect(await h.flow.state(slot)).toMatchObject({ holders: [{ jobId: 'b' }], waiting: 0 });
    expect(h.queue.sent.map((s) => s.message.id)).toContain('b');
  });
});
