/**
 * The worker with concurrency limits, on in-memory ports (the fake slots pass the adapter's
 * contract): a job takes its slot before its claim, a job with no free slot waits without being
 * claimed or polled, and the job that frees a slot sends the next one its message.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJobType } from '../../shared/core/job-type';
import { ConfigError, DependencyError } from '../../shared/errors';
import type { JobDefinition } from '../../shared/runtime/job-definition';
import { createWorker } from '../../shared/runtime/worker';
import { FakeJobQueue, FakeJobStore, sqsEvent, testConfig } from '../support/fakes';
import { echoJob, gated, harness, logged, messageFor, QUEUE_URL, T0 } from './worker-harness';

/** `echo` with one slot per tenant. */
const perTenant = defineJobType({
  type: 'echo',
  payload: z.object({ n: z.number(), tenant: z.string() }),
  timeoutMs: 1000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
  concurrency: [{ limit: 1, key: (p) => p.tenant }],
});
const slot = (key: string) => ({ scope: 'echo#0', key, limit: 1 });
const job = (id: string, tenant: string, overrides = {}) =>
  echoJob(id, { payload: { n: 1, tenant }, flowKeys: [tenant], ...overrides });

describe('worker: concurrency limits', () => {
  it('lets a job wait, unclaimed, while its key is full, and sends it its message when the slot frees', async () => {
    const g = gated();
    const h = harness({ spec: perTenant, run: g.run as never });
    h.store.seed(job('a', 't1'));
    h.store.seed(job('b', 't1'));

    const running = h.worker(sqsEvent(messageFor('a')));
    await g.until('a');
    // b's message comes while a runs: b waits, its message is done with, nothing polls
    expect(await h.worker(sqsEvent(messageFor('b')))).toEqual({ batchItemFailures: [] });
    expect(h.store.peek('b')).toMatchObject({
      state: 'queued',
      attempts: 0,
      waitingFor: { kind: 'concurrency', limit: 0, key: 't1', ticket: 0, since: new Date(T0).toISOString() },
    });
    expect(h.queue.visibility).toEqual([]);
    expect(h.queue.sent).toEqual([]);
    expect(logged(h.logs, 'waiting for a concurrency slot')).toHaveLength(1);
    expect(await h.flow.state(slot('t1'))).toMatchObject({ holders: [{ jobId: 'a' }], waiting: 1 });

    g.release('a');
    await running;
    // a gave its slot to b and sent b its message
    expect(h.store.peek('a')?.state).toBe('succeeded');
    expect(await h.flow.state(slot('t1'))).toMatchObject({ holders: [{ jobId: 'b' }], waiting: 0 });
    expect(h.queue.sent).toEqual([
      { queueUrl: QUEUE_URL, message: { v: 1, id: 'b', type: 'echo' }, delaySeconds: undefined },
    ]);

    const second = h.worker(sqsEvent(messageFor('b')));
    await g.until('b');
    g.release('b');
    await second;
    expect(h.store.peek('b')).toMatchObject({ state: 'succeeded', attempts: 1 });
    expect(h.store.peek('b')?.waitingFor).toBeUndefined();
    expect(await h.flow.state(slot('t1'))).toMatchObject({ holders: [], waiting: 0 });
  });

  it('runs jobs of different keys at once', async () => {
    const g = gated();
    const h = harness({ spec: perTenant, run: g.run as never });
    h.store.seed(job('a', 't1'));
    h.store.seed(job('b', 't2'));
    const both = h.worker(sqsEvent(messageFor('a'), messageFor('b')));
    await g.until('a');
    await g.until('b');
    expect(g.started.sort()).toEqual(['a', 'b']);
    g.release('a');
    g.release('b');
    await both;
  });

  it('keeps a waiting job in its place when its message comes again (a duplicate, a supervisor resend)', async () => {
    const g = gated();
    const h = harness({ spec: perTenant, run: g.run as never });
    h.store.seed(job('a', 't1'));
    h.store.seed(job('b', 't1'));
    const running = h.worker(sqsEvent(messageFor('a')));
    await g.until('a');
    await h.worker(sqsEvent(messageFor('b')));
    const marked = h.store.calls.filter((c) => c.method === 'markWaiting').length;
    await h.worker(sqsEvent(messageFor('b', { messageId: 'm-b-again' })));
    expect(h.flow.writes.ticket).toBe(1);
    expect(h.store.calls.filter((c) => c.method === 'markWaiting').length).toBe(marked);
    expect(h.store.peek('b')?.waitingFor).toMatchObject({ kind: 'concurrency', ticket: 0 });
    g.release('a');
    await running;
  });

  it('gives the slot back after a failed attempt: the retry waits for its backoff without it', async () => {
    const h = harness({
      spec: perTenant,
      run: async (_p, ctx) => {
        if (ctx.jobId === 'a') throw new Error('boom');
        return 'ok';
      },
    });
    h.store.seed(job('a', 't1'));
    await h.worker(sqsEvent(messageFor('a')));
    expect(h.store.peek('a')?.state).toBe('retrying');
    expect(await h.flow.state(slot('t1'))).toMatchObject({ holders: [] });
  });

  it('hands on the slot of a job cancelled while it waited, when its message comes', async () => {
    const h = harness({ spec: perTenant });
    h.store.seed(job('b', 't1', { state: 'cancelled' }));
    h.store.seed(job('c', 't1'));
    // b was handed the slot (it had waited), and c waits behind it
    await h.flow.acquire({ slot: slot('t1'), jobId: 'b', type: 'echo', now: T0, token: 1 });
    await h.flow.acquire({ slot: slot('t1'), jobId: 'c', type: 'echo', now: T0, token: 1 });

    await h.worker(sqsEvent(messageFor('b')));
    expect(await h.flow.state(slot('t1'))).toMatchObject({ holders: [{ jobId: 'c' }], waiting: 0 });
    expect(h.queue.sent.map((s) => s.message.id)).toEqual(['c']);
  });

  it('logs the give-back of a place its job never started on, with the slot and the holder, when nobody waits to be handed it', async () => {
    const h = harness({ spec: perTenant });
    h.store.seed(job('b', 't1', { state: 'cancelled' }));
    // b was handed the slot (it had waited); nobody waits behind it
    await h.flow.acquire({ slot: slot('t1'), jobId: 'b', type: 'echo', now: T0, token: 1 });

    await h.worker(sqsEvent(messageFor('b')));
    expect(await h.flow.state(slot('t1'))).toMatchObject({ holders: [], waiting: 0 });
    // nothing was handed on: the give-back is the only line that says the place ended
    expect(logged(h.logs, 'handed a place in line on')).toEqual([]);
    expect(logged(h.logs, 'gave back a concurrency slot')).toEqual([
      expect.objectContaining({ scope: slot('t1').scope, key: slot('t1').key, holder: 'b' }),
    ]);
  });

  it('logs the place it frees of a job waiting for its retry (left behind), with the slot and the holder', async () => {
    const h = harness({ spec: perTenant });
    // r holds the slot but waits for a retry an hour away (its worker died before giving it back)
    h.store.seed(job('r', 't1', { state: 'retrying', runAt: new Date(T0 + 3_600_000).toISOString() }));
    h.store.seed(job('b', 't1'));
    await h.flow.acquire({ slot: slot('t1'), jobId: 'r', type: 'echo', now: T0, token: 1 });

    await h.worker(sqsEvent(messageFor('b')));
    expect(await h.flow.state(slot('t1'))).toMatchObject({ holders: [{ jobId: 'b' }], waiting: 0 });
    expect(logged(h.logs, 'freed a concurrency slot its job never gave back')).toEqual([
      expect.objectContaining({ scope: slot('t1').scope, key: slot('t1').key, holder: 'r', state: 'retrying' }),
    ]);
  });

  it('frees a slot its job never gave back (finished, its worker died first) when the next job must wait', async () => {
    const h = harness({ spec: perTenant });
    h.store.seed(job('gone', 't1', { state: 'succeeded' }));
    h.store.seed(job('b', 't1'));
    await h.flow.acquire({ slot: slot('t1'), jobId: 'gone', type: 'echo', now: T0, token: 1 });

    await h.worker(sqsEvent(messageFor('b')));
    // b waited, found the holder finished, freed its slot and was handed it
    expect(await h.flow.state(slot('t1'))).toMatchObject({ holders: [{ jobId: 'b' }], waiting: 0 });
    expect(h.queue.sent.map((s) => s.message.id)).toEqual(['b']);
    expect(logged(h.logs, 'freed a concurrency slot its job never gave back')).toHaveLength(1);
    await h.worker(sqsEvent(messageFor('b', { messageId: 'm-b-2' })));
    expect(h.store.peek('b')?.state).toBe('succeeded');
  });

  it('sends its message again to a holder handed its slot long ago that never started', async () => {
    const h = harness({ spec: perTenant });
    h.store.seed(job('admitted', 't1'));
    h.store.seed(job('b', 't1'));
    await h.flow.acquire({ slot: slot('t1'), jobId: 'admitted', type: 'echo', now: T0, token: 1 });
    h.clock.advance(5 * 60_000);
    await h.worker(sqsEvent(messageFor('b')));
    expect(h.queue.sent.map((s) => s.message.id)).toEqual(['admitted']);
    // the holder was read, so its message goes out in its tenant's SQS group (a hand-on by id alone has none)
    expect(h.queue.sent.map((s) => s.groupId)).toEqual(['echo:t1']);
    expect(await h.flow.state(slot('t1'))).toMatchObject({ holders: [{ jobId: 'admitted' }], waiting: 1 });
  });

  it('gives the attempt back, unrun, when the job changed between its read and its claim and no slot is free', async () => {
    const ran: string[] = [];
    const h = harness({ spec: perTenant, run: async (_p, ctx) => ran.push(ctx.jobId) });
    // a runs (attempt 1, live lease); 'other' holds the key's only slot
    h.store.seed(job('a', 't1', { state: 'running', attempts: 1, leaseToken: 1, leaseExpiresAt: T0 + 30_000 }));
    h.store.seed(job('other', 't1', { state: 'running', attempts: 1, leaseToken: 1, leaseExpiresAt: T0 + 30_000 }));
    await h.flow.acquire({ slot: slot('t1'), jobId: 'other', type: 'echo', now: T0, token: 1 });
    // the read sees a running (a duplicate: no slot taken); by the claim its attempt has ended in a
    // retry that is due at once, so the claim succeeds
    const get = h.store.get.bind(h.store);
    let changed = false;
    h.store.get = async (id: string) => {
      const seen = await get(id);
      if (id === 'a' && !changed) {
        changed = true;
        h.store.seed(job('a', 't1', { state: 'retrying', attempts: 1, leaseToken: 1 }));
      }
      return seen;
    };
    await h.worker(sqsEvent(messageFor('a')));
    expect(ran).toEqual([]);
    // the attempt it never ran is given back: attempts stays at 1, leaseToken moved on
    expect(h.store.peek('a')).toMatchObject({ state: 'retrying', attempts: 1, leaseToken: 2 });
    expect(await h.flow.state(slot('t1'))).toMatchObject({ holders: [{ jobId: 'other' }], waiting: 1 });
    expect(logged(h.logs, 'claimed without a free concurrency slot; waiting for one')).toHaveLength(1);
  });

  it('takes no slot for a job that is not due yet', async () => {
    const h = harness({ spec: perTenant });
    h.store.seed(job('later', 't1', { runAt: new Date(T0 + 60_000).toISOString() }));
    await h.worker(sqsEvent(messageFor('later')));
    expect(await h.flow.state(slot('t1'))).toMatchObject({ holders: [], waiting: 0 });
    expect(h.store.peek('later')?.state).toBe('queued');
  });

  it('refuses to build a worker for a limited type without flow slots (a definition typed wide, or from JavaScript)', () => {
    // typed as its spec, this does not compile (test/types/worker-ports.test-d.ts)
    const wide: JobDefinition = { spec: perTenant, run: async () => 'ok' };
    expect(() =>
      createWorker(wide, { config: testConfig(['echo']), store: new FakeJobStore(), queue: new FakeJobQueue() }),
    ).toThrow(ConfigError);
  });

  it('keeps the message of a job whose slot could not be given back, and its next delivery gives it back', async () => {
    const h = harness({ spec: perTenant });
    h.store.seed(job('a', 't1'));
    let failing = true;
    h.flow.hook = (operation) => {
      if (failing && operation === 'release')
        throw new DependencyError('DynamoDB UpdateItem (flow release): throttled');
    };
    const out = await h.worker(sqsEvent(messageFor('a')));
    expect(h.store.peek('a')?.state).toBe('succeeded');
    expect(out.batchItemFailures).toEqual([{ itemIdentifier: 'm-a' }]); // kept, not deleted
    expect((await h.flow.state(slot('t1'))).holders.map((x) => x.jobId)).toEqual(['a']);
    failing = false;
    expect(await h.worker(sqsEvent(messageFor('a', { receiveCount: 2 })))).toEqual({ batchItemFailures: [] });
    expect(await h.flow.state(slot('t1'))).toMatchObject({ holders: [], waiting: 0 });
  }, 20_000);
});
