/**
 * Throttles in the worker and rate limits at enqueue, on in-memory ports (the GCRA reference
 * behind FakePacer passes the same contract as DynamoPacer). The start-time bound under load on
 * local AWS is test/integration/flow-throttle.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { JobsService } from '../../shared/api/jobs-service';
import { ManualClock } from '../../shared/core/clock';
import { defineJobType, type JobTypeSpec } from '../../shared/core/job-type';
import { createLogger } from '../../shared/logger';
import { FakeJobQueue, FakeJobScheduler, FakeJobStore, newJob, sqsEvent, testConfig } from '../support/fakes';
import { FakePacer } from '../support/flow-fakes';
import { harness, messageFor, T0 } from './worker-harness';

const payload = z.object({ n: z.number(), api: z.string() });
// one start per 2 s per API key: a second job must wait beyond the 1 s a worker waits in place
const throttled = defineJobType({
  type: 'echo',
  payload,
  timeoutMs: 1000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
  throttle: { limit: 1, periodSeconds: 2, key: (p) => p.api },
});
const job = (id: string, api = 'k1') => newJob({ id, type: 'echo', payload: { n: 1, api }, throttleKey: api }, T0);

describe('throttle in the worker', () => {
  it('starts a job whose turn is now, and hides one whose turn is later until then, saying why it waits', async () => {
    const started: string[] = [];
    const h = harness({
      spec: throttled as JobTypeSpec,
      run: async (_p, ctx) => {
        started.push(ctx.jobId);
        return 'ok';
      },
    });
    for (const id of ['a', 'b', 'c']) h.store.seed(job(id));
    h.store.seed(job('other', 'k2'));
    await h.worker(sqsEvent(messageFor('a')));
    await h.worker(sqsEvent(messageFor('other'))); // another key: its own turns
    expect(started).toEqual(['a', 'other']);
    // b's turn is 2 s away: not claimed, the message comes back then (a batch item failure)
    const out = await h.worker(sqsEvent(messageFor('b')));
    expect(out.batchItemFailures).toEqual([{ itemIdentifier: 'm-b' }]);
    expect(h.queue.visibility.at(-1)?.seconds).toBe(2);
    expect(h.store.peek('b')).toMatchObject({
      state: 'queued',
      attempts: 0,
      waitingFor: { kind: 'throttle', key: 'k1', until: new Date(T0 + 2000).toISOString(), token: 1 },
    });
    await h.worker(sqsEvent(messageFor('c')));
    expect(h.store.peek('c')?.waitingFor).toMatchObject({ until: new Date(T0 + 4000).toISOString() });
    const turns = h.pacer.writes;
    // a duplicate of b's message keeps b's turn: no new one is taken
    await h.worker(sqsEvent(messageFor('b', { messageId: 'm-b-dup' })));
    expect(h.pacer.writes).toBe(turns);
    // at its turn, b starts without taking another
    h.clock.set(T0 + 2000);
    await h.worker(sqsEvent(messageFor('b', { messageId: 'm-b-back' })));
    expect(started).toEqual(['a', 'other', 'b']);
    expect(h.pacer.writes).toBe(turns);
    expect(h.store.peek('b')).toMatchObject({ state: 'succeeded' });
    expect(h.store.peek('b')?.waitingFor).toBeUndefined();
  });

  it('keeps the turn of a takeover (a job left running by a lost worker): its redeliveries take no new turns', async () => {
    const started: string[] = [];
    const h = harness({
      spec: throttled as JobTypeSpec,
      run: async (_p, ctx) => {
        started.push(ctx.jobId);
        return 'ok';
      },
    });
    h.store.seed(job('a'));
    await h.worker(sqsEvent(messageFor('a'))); // a takes the key's turn now
    // b was claimed long ago by a worker that died: running, its lease long expired
    h.store.seed({
      ...job('b'),
      state: 'running',
      attempts: 1,
      leaseToken: 1,
      leaseOwner: 'dead',
      leaseExpiresAt: T0 - 60_000,
      startedAt: new Date(T0 - 90_000).toISOString(),
    });
    const out = await h.worker(sqsEvent(messageFor('b'))); // its takeover waits for its turn, 2 s away
    expect(out.batchItemFailures).toEqual([{ itemIdentifier: 'm-b' }]);
    const turns = h.pacer.writes;
    // its message comes back at its turn (or a copy before): the same turn, no new one
    await h.worker(sqsEvent(messageFor('b', { messageId: 'm-b-dup' })));
    expect(h.pacer.writes, 'a redelivery before the turn took a new one').toBe(turns);
    h.clock.set(T0 + 2000);
    await h.worker(sqsEvent(messageFor('b', { messageId: 'm-b-back' })));
    expect(h.pacer.writes, 'the redelivery at the turn took a new one').toBe(turns);
    expect(started).toEqual(['a', 'b']);
    expect(h.store.peek('b')).toMatchObject({ state: 'succeeded', attempts: 2 });
  });

  it('gives a job that comes to its turn more than a second late a new turn instead of starting late', async () => {
    const started: string[] = [];
    const h = harness({
      spec: throttled as JobTypeSpec,
      run: async (_p, ctx) => {
        started.push(ctx.jobId);
        return 'ok';
      },
    });
    for (const id of ['a', 'b', 'c']) h.store.seed(job(id));
    await h.worker(sqsEvent(messageFor('a')));
    await h.worker(sqsEvent(messageFor('b'))); // turn at T0 + 2 s
    await h.worker(sqsEvent(messageFor('c'))); // turn at T0 + 4 s
    h.clock.set(T0 + 3500); // b is 1.5 s late: its turn passed, and the key's next is T0 + 6 s
    const out = await h.worker(sqsEvent(messageFor('b', { messageId: 'm-b-late' })));
    expect(started).toEqual(['a']);
    expect(out.batchItemFailures).toHaveLength(1);
    expect(h.store.peek('b')?.waitingFor).toMatchObject({ kind: 'throttle', until: new Date(T0 + 6000).toISOString() });
    // within a second of its turn (late or early), a job starts on it
    h.clock.set(T0 + 4900);
    await h.worker(sqsEvent(messageFor('c', { messageId: 'm-c-late' })));
    expect(started).toEqual(['a', 'c']);
  });

  it('takes a turn for each attempt: a retry waits for its own', async () => {
    let calls = 0;
    const h = harness({
      spec: throttled as JobTypeSpec,
      run: async () => {
        calls += 1;
        if (calls === 1) throw new Error('first attempt fails');
        return 'ok';
      },
    });
    h.store.seed(job('a'));
    await h.worker(sqsEvent(messageFor('a')));
    expect(h.store.peek('a')).toMatchObject({ state: 'retrying', attempts: 1 });
    h.clock.set(T0 + 2000); // the backoff is 2 s; the key's next turn is T0 + 2 s too
    await h.worker(sqsEvent(messageFor('a', { messageId: 'm-a-retry' })));
    expect(h.store.peek('a')).toMatchObject({ state: 'succeeded', attempts: 2 });
    expect(h.pacer.writes).toBe(2);
  });
});

describe('rate limit at enqueue', () => {
  const limited = defineJobType({
    type: 'echo',
    payload,
    rateLimit: { limit: 2, periodSeconds: 60, key: (p) => p.api },
  });

  function service() {
    const store = new FakeJobStore();
    const queue = new FakeJobQueue();
    const pacer = new FakePacer();
    const clock = new ManualClock(T0);
    const jobs = new JobsService({
      config: testConfig(['echo']),
      catalog: [limited as JobTypeSpec],
      store,
      queue,
      scheduler: new FakeJobScheduler(),
      clock,
      log: createLogger({ level: 'silent' }),
      pacer,
    });
    return { jobs, store, queue, pacer, clock };
  }

  it('accepts up to the limit per key, then writes the excess as skipped with its reason, and sends nothing for it', async () => {
    const { jobs, store, queue, clock } = service();
    const enqueue = (id: string, api = 'k1') => jobs.enqueue({ type: 'echo', id, payload: { n: 1, api } });
    expect((await enqueue('a')).job.state).toBe('queued');
    expect((await enqueue('b')).job.state).toBe('queued');
    const c = await enqueue('c');
    expect(c).toMatchObject({
      created: true,
      job: { state: 'skipped', skipReason: { kind: 'rate-limit', key: 'k1' }, attempts: 0 },
    });
    expect(store.peek('c')).toMatchObject({ state: 'skipped', finishedAt: new Date(T0).toISOString() });
    expect(store.peek('c')?.expiresAt).toBe(Math.floor(T0 / 1000) + 30 * 86_400);
    expect((await enqueue('d', 'k2')).job.state).toBe('queued'); // another key
    expect(queue.sent.map((s) => s.message.id)).toEqual(['a', 'b', 'd']);
    // a replay of an accepted id counts nothing and answers the stored job
    expect(await enqueue('a')).toMatchObject({ created: false, job: { state: 'queued' } });
    // the rate allows one more 30 s later (60 s / 2)
    clock.set(T0 + 30_000);
    expect((await enqueue('e')).job.state).toBe('queued');
    expect((await enqueue('f')).job.state).toBe('skipped');
  });

  it('refuses to build without a pacer, and refuses a bad declaration', () => {
    expect(
      () =>
        new JobsService({
          config: testConfig(['echo']),
          catalog: [limited as JobTypeSpec],
          store: new FakeJobStore(),
          queue: new FakeJobQueue(),
          scheduler: new FakeJobScheduler(),
          clock: new ManualClock(T0),
          log: createLogger({ level: 'silent' }),
        }),
    ).toThrow(/has a rate limit: the API needs its pacer/);
    const declare = (extra: Record<string, unknown>) => () => defineJobType({ type: 'echo', payload, ...extra });
    expect(declare({ rateLimit: { limit: 0, periodSeconds: 1 } })).toThrow(/rateLimit.limit must be an integer/);
    expect(declare({ rateLimit: { limit: 1, periodSeconds: 1, burst: 3 } })).toThrow(/rateLimit has no burst/);
    expect(declare({ throttle: { limit: 5, periodSeconds: 0 } })).toThrow(/throttle.periodSeconds must be/);
    expect(declare({ throttle: { limit: 5, periodSeconds: 1, burst: 0 } })).toThrow(/throttle.burst must be/);
    expect(declare({ throttle: { limit: 5, periodSeconds: 1, key: 'api' } })).toThrow(
      /throttle.key must be a function/,
    );
  });

  it('answers 400 with the field when a key function cannot compute a key, and writes nothing', async () => {
    const { store } = service();
    const bad = defineJobType({
      type: 'echo',
      payload,
      throttle: {
        limit: 1,
        periodSeconds: 1,
        key: () => {
          throw new Error('no api key');
        },
      },
    });
    const jobs = new JobsService({
      config: testConfig(['echo']),
      catalog: [bad as JobTypeSpec],
      store,
      queue: new FakeJobQueue(),
      scheduler: new FakeJobScheduler(),
      clock: new ManualClock(T0),
      log: createLogger({ level: 'silent' }),
    });
    await expect(jobs.enqueue({ type: 'echo', id: 'x', payload: { n: 1, api: 'k' } })).rejects.toMatchObject({
      code: 'invalid_throttle_key',
      issues: [{ path: 'payload', message: expect.stringContaining('throttle.key threw: no api key') }],
    });
    expect(store.peek('x')).toBeUndefined();
  });
});
