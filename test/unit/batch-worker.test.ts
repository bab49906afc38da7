import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ManualClock, type Timer } from '../../shared/core/clock';
import { defineEvent, type EventDefinition } from '../../shared/core/events';
import { defineJobType } from '../../shared/core/job-type';
import { ConfigError } from '../../shared/errors';
import { createLogger } from '../../shared/logger';
import {
  type BatchHandler,
  type BatchItem,
  type BatchJobDefinition,
  createBatchWorker,
} from '../../shared/runtime/batch-worker';
import { defineBatchJob } from '../../shared/runtime/define-batch-job';
import { defineJob } from '../../shared/runtime/define-job';
import { createWorker } from '../../shared/runtime/worker';
import { captureLogs, FakeJobQueue, FakeJobStore, MemoryMetrics, sqsEvent, testConfig } from '../support/fakes';
import { echoJob, messageFor, T0 } from './worker-harness';

/** `echo` in batches: payload `{ n }`, 3 attempts, a constant 2 s backoff. */
const batchSpec = defineJobType({
  type: 'echo',
  payload: z.object({ n: z.number() }),
  timeoutMs: 1000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
  batch: { maxSize: 100, maxWaitSeconds: 5 },
});

const keyedSpec = defineJobType({
  type: 'echo',
  payload: z.object({ n: z.number() }),
  timeoutMs: 1000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
  batch: { maxSize: 100, maxWaitSeconds: 5, key: (p) => (p.n % 2 === 0 ? 'even' : 'odd') },
});

type Payload = { n: number };

/** A batch worker on in-memory ports; records each handler call's job ids (and key). */
function batchHarness(
  handler: BatchHandler<Payload>,
  spec: typeof batchSpec | typeof keyedSpec = batchSpec,
  timer?: Timer,
) {
  const store = new FakeJobStore();
  const queue = new FakeJobQueue();
  const clock = new ManualClock(T0);
  const logs = captureLogs();
  const calls: { ids: string[]; key: string | undefined }[] = [];
  const def: BatchJobDefinition = {
    spec,
    runBatch: async (items, ctx) => {
      calls.push({ ids: items.map((i) => i.jobId), key: ctx.key });
      return await handler(items as BatchItem<Payload>[], ctx);
    },
  };
  const deps = {
    config: testConfig(['echo']),
    store,
    queue,
    clock,
    owner: 'worker-test',
    random: () => 0.5,
    logger: createLogger({ level: 'debug', sink: logs.sink }),
    metrics: new MemoryMetrics(),
    ...(timer ? { timer } : {}),
  };
  return { store, queue, clock, calls, logs: logs.lines, worker: createBatchWorker(def, deps), deps };
}

const seedJobs = (store: FakeJobStore, count: number) => {
  const ids = Array.from({ length: count }, (_, i) => `job-${i + 1}`);
  for (const [i, id] of ids.entries()) store.seed(echoJob(id, { payload: { n: i + 1 } }));
  return ids;
};
const eventOf = (ids: readonly string[]) => sqsEvent(...ids.map((id) => messageFor(id)));
const doubled: BatchHandler<Payload> = async (items) =>
  items.map((i) => ({ ok: true, result: { n: i.payload.n * 2 } }));

describe('batch worker: one handler call, an outcome per job', () => {
  it('calls the handler once with every claimed job and records each result on its own job', async () => {
    const h = batchHarness(doubled);
    const ids = seedJobs(h.store, 5);

    expect(await h.worker(eventOf(ids))).toEqual({ batchItemFailures: [] });

    expect(h.calls).toEqual([{ ids, key: undefined }]);
    for (const [i, id] of ids.entries()) {
      const job = h.store.peek(id);
      expect(job?.state).toBe('succeeded');
      expect(job?.attempts).toBe(1);
      expect(job?.result).toEqual({ n: (i + 1) * 2 });
    }
  });

  it('retries a failed item alone: its message comes back, the others are done and never run again', async () => {
    const h = batchHarness(async (items) =>
      items.map((i) => (i.payload.n === 2 ? { ok: false, error: new Error('bounced') } : { ok: true, result: 'sent' })),
    );
    const ids = seedJobs(h.store, 3);

    expect(await h.worker(eventOf(ids))).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-job-2' }] });
    expect(h.store.peek('job-1')?.state).toBe('succeeded');
    expect(h.store.peek('job-3')?.state).toBe('succeeded');
    const failed = h.store.peek('job-2');
    expect(failed?.state).toBe('retrying');
    expect(failed?.errors).toEqual([expect.objectContaining({ message: 'bounced', attempt: 1 })]);

    // The retry is due after the 2 s backoff; a duplicate of a done job's message comes along.
    h.clock.advance(2000);
    const retry = sqsEvent(
      messageFor('job-2', { messageId: 'again-2', receiveCount: 2 }),
      messageFor('job-1', { messageId: 'again-1', receiveCount: 2 }),
    );
    expect(await h.worker(retry)).toEqual({ batchItemFailures: [{ itemIdentifier: 'again-2' }] });
    expect(h.calls.map((c) => c.ids)).toEqual([ids, ['job-2']]);
    expect(h.store.peek('job-2')?.attempts).toBe(2);
    expect(h.store.peek('job-1')?.attempts).toBe(1);
  });

  it('fails every item of a call that throws, each by its own retry policy', async () => {
    const h = batchHarness(async () => {
      throw new Error('mailer down');
    });
    const ids = seedJobs(h.store, 2);
    h.store.seed(echoJob('job-3', { payload: { n: 3 }, attempts: 2 })); // its last attempt

    const response = await h.worker(eventOf([...ids, 'job-3']));

    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(['m-job-1', 'm-job-2']);
    expect(h.store.peek('job-1')?.state).toBe('retrying');
    expect(h.store.peek('job-2')?.state).toBe('retrying');
    expect(h.store.peek('job-3')?.state).toBe('failed');
    expect(h.calls).toHaveLength(1);
  });

  it('fails the items a handler gave no outcome for, and records the others', async () => {
    const h = batchHarness(async (items) => items.slice(0, 1).map(() => ({ ok: true, result: 'only one' })));
    const ids = seedJobs(h.store, 2);

    expect(await h.worker(eventOf(ids))).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-job-2' }] });
    expect(h.store.peek('job-1')?.result).toBe('only one');
    expect(h.store.peek('job-2')?.errors).toEqual([
      expect.objectContaining({ message: 'the batch handler returned no outcome for job job-2' }),
    ]);
  });
});

describe('batch worker: each outcome on its own job', () => {
  it('never records one job’s outcome on another when the handler reorders its items array in place', async () => {
    // a handler that sorts its items (largest first) and answers in that order
    const h = batchHarness(async (items) => {
      // (its items are typed readonly: a handler in plain JavaScript, or one that casts, gets here)
      (items as BatchItem<Payload>[]).sort((a, b) => b.payload.n - a.payload.n);
      return items.map((i) =>
        i.payload.n === 3 ? { ok: false, error: new Error('bounced') } : { ok: true, result: i.payload.n },
      );
    });
    const ids = seedJobs(h.store, 3);

    const response = await h.worker(eventOf(ids));

    for (const [i, id] of ids.entries()) {
      const job = h.store.peek(id);
      // a job is never succeeded with another job's result, nor failed with another job's error
      if (job?.state === 'succeeded') expect(job.result).toBe(i + 1);
      if (i + 1 !== 3) expect(job?.errors ?? []).not.toContainEqual(expect.objectContaining({ message: 'bounced' }));
    }
    expect(h.store.peek('job-3')?.state).not.toBe('succeeded');
    expect(response.batchItemFailures).toContainEqual({ itemIdentifier: 'm-job-3' });
  });
});

describe('batch worker: timeouts per item', () => {
  it('records a timed-out item when its own timeout fires, ignores its later outcome, and records the others', async () => {
    // each item's timeout, in the order the attempts set them; the test fires the first only
    const timeouts: (() => void)[] = [];
    let aborted: boolean[] = [];
    const h = batchHarness(
      async (items) => {
        timeouts[0]?.();
        aborted = items.map((i) => i.signal.aborted);
        return items.map((i) => ({ ok: true, result: `late for ${i.jobId}` }));
      },
      batchSpec,
      {
        after: (_ms, fire) => {
          timeouts.push(fire);
          return () => {};
        },
      },
    );
    const ids = seedJobs(h.store, 2);

    expect(await h.worker(eventOf(ids))).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-job-1' }] });
    expect(timeouts).toHaveLength(2);
    expect(aborted).toEqual([true, false]);
    const timedOut = h.store.peek('job-1');
    expect(timedOut?.state).toBe('retrying');
    expect(timedOut?.result).toBeUndefined();
    expect(timedOut?.errors).toEqual([expect.objectContaining({ reason: 'timeout', name: 'JobTimeoutError' })]);
    expect(h.store.peek('job-2')?.result).toBe('late for job-2');
  });
});

describe('batch worker: claims that fail leave the item out', () => {
  /** A done job, one leased by another worker, one not yet due, and one ready to run. */
  const seedMixed = (store: FakeJobStore) => {
    store.seed(echoJob('done', { state: 'succeeded', attempts: 1, result: 'earlier' }));
    store.seed(
      echoJob('leased', {
        state: 'running',
        attempts: 1,
        leaseToken: 1,
        leaseOwner: 'other',
        leaseExpiresAt: T0 + 10_000,
      }),
    );
    store.seed(echoJob('later', { runAt: new Date(T0 + 60_000).toISOString() }));
    store.seed(echoJob('ready', { payload: { n: 7 } }));
  };
  const event = () => eventOf(['done', 'leased', 'later', 'ready']);

  it('calls the handler with only the jobs it claimed, and answers each other record as the single-job worker does', async () => {
    const h = batchHarness(doubled);
    seedMixed(h.store);
    const batchResponse = await h.worker(event());

    const single = new FakeJobStore();
    seedMixed(single);
    const queue = new FakeJobQueue();
    const singleWorker = createWorker(
      { spec: batchSpec, run: async (p: Payload) => ({ n: p.n * 2 }) },
      { ...h.deps, store: single, queue, clock: new ManualClock(T0) },
    );
    const singleResponse = await singleWorker(event());

    expect(h.calls).toEqual([{ ids: ['ready'], key: undefined }]);
    expect(batchResponse).toEqual(singleResponse);
    // the same writes, but for the random suffix of each claim's owner
    const written = (job: ReturnType<FakeJobStore['peek']>) => ({ ...job, lastWriter: job?.lastWriter?.split(':')[0] });
    for (const id of ['done', 'leased', 'later', 'ready'])
      expect(written(h.store.peek(id))).toEqual(written(single.peek(id)));
    expect(h.store.peek('ready')?.result).toEqual({ n: 14 });
    expect(h.queue.visibility).toEqual(queue.visibility);
  });

  it('does not call the handler when no job of the batch could be claimed', async () => {
    const h = batchHarness(doubled);
    seedMixed(h.store);
    await h.worker(eventOf(['done', 'leased']));
    expect(h.calls).toEqual([]);
  });
});

describe('batch worker: grouping by key', () => {
  it('calls the handler once per key value, with that value’s jobs in the order received', async () => {
    const h = batchHarness(doubled, keyedSpec);
    const ids = seedJobs(h.store, 5);

    expect(await h.worker(eventOf(ids))).toEqual({ batchItemFailures: [] });

    expect(h.calls).toHaveLength(2);
    expect(h.calls).toEqual(
      expect.arrayContaining([
        { ids: ['job-1', 'job-3', 'job-5'], key: 'odd' },
        { ids: ['job-2', 'job-4'], key: 'even' },
      ]),
    );
    expect(ids.map((id) => h.store.peek(id)?.state)).toEqual(Array(5).fill('succeeded'));
  });
});

describe('defineBatchJob', () => {
  it('binds a handler whose outcomes are typed by the spec’s payload, and runs under the batch worker', async () => {
    const email = defineBatchJob(batchSpec, async (items) =>
      items.map((i) =>
        i.payload.n > 1
          ? { ok: true, result: { twice: i.payload.n * 2 } }
          : { ok: false, error: new Error('too small') },
      ),
    );
    expect(typeof email.handler).toBe('function');
    const h = batchHarness(doubled);
    const ids = seedJobs(h.store, 2);
    const worker = createBatchWorker(email, h.deps);

    expect(await worker(eventOf(ids))).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-job-1' }] });
    expect(h.store.peek('job-2')?.result).toEqual({ twice: 4 });
    expect(h.store.peek('job-1')?.errors).toEqual([expect.objectContaining({ message: 'too small' })]);
  });
});

describe('batch settings at the spec boundary', () => {
  const withBatch = (batch: unknown) => () =>
    defineJobType({ type: 'mail', payload: z.object({}), batch: batch as { maxSize: number; maxWaitSeconds: number } });

  it.each([
    [{ maxSize: 0, maxWaitSeconds: 1 }, /batch.maxSize must be an integer from 1 to 10000/],
    [{ maxSize: 10_001, maxWaitSeconds: 1 }, /batch.maxSize must be an integer from 1 to 10000/],
    [{ maxSize: 2.5, maxWaitSeconds: 1 }, /batch.maxSize must be an integer/],
    [{ maxSize: 10, maxWaitSeconds: 301 }, /batch.maxWaitSeconds must be an integer from 0 to 300/],
    [{ maxSize: 10, maxWaitSeconds: -1 }, /batch.maxWaitSeconds must be an integer from 0 to 300/],
    [{ maxSize: 11, maxWaitSeconds: 0 }, /over 10 needs batch.maxWaitSeconds of at least 1/],
    [{ maxSize: 10, maxWaitSeconds: 1, key: 'tenant' }, /batch.key must be a function/],
    ['100', /batch must be an object/],
  ])('refuses %j', (batch, message) => {
    expect(withBatch(batch)).toThrow(ConfigError);
    expect(withBatch(batch)).toThrow(message);
  });

  it('takes the limits of the event source mapping on a standard queue', () => {
    expect(withBatch({ maxSize: 10_000, maxWaitSeconds: 300 })().batch).toEqual({
      maxSize: 10_000,
      maxWaitSeconds: 300,
    });
    expect(withBatch({ maxSize: 10, maxWaitSeconds: 0 })().batch).toEqual({ maxSize: 10, maxWaitSeconds: 0 });
  });

  it('refuses signals and events to wait for beside batch settings: a batch handler never waits for them', () => {
    // the API would take a signal, or an event for the type's waits, that no handler ever reads
    const withWaits = (waits: { signals?: Record<string, z.ZodType>; waitsFor?: EventDefinition[] }) => () =>
      defineJobType({ type: 'mail', payload: z.object({}), batch: { maxSize: 10, maxWaitSeconds: 1 }, ...waits });
    expect(withWaits({ signals: { approved: z.object({}) } })).toThrow(ConfigError);
    expect(withWaits({ signals: { approved: z.object({}) } })).toThrow(/batch.*signals|signals.*batch/);
    const bounced = defineEvent('mail.bounced', z.object({ to: z.string() }));
    expect(withWaits({ waitsFor: [bounced] })).toThrow(ConfigError);
    expect(withWaits({ waitsFor: [bounced] })).toThrow(/batch.*waitsFor|waitsFor.*batch/);
  });

  it('refuses a single-job handler for a type with batch settings', () => {
    expect(() => defineJob(batchSpec, async (p) => p)).toThrow(
      /has batch settings: define its handler with defineBatchJob/,
    );
  });

  it('refuses a batch handler for a type without batch settings', () => {
    const plain = defineJobType({ type: 'mail', payload: z.object({}) });
    expect(() =>
      defineBatchJob(plain, async (items) => items.map(() => ({ ok: true as const, result: null }))),
    ).toThrow(/has no batch settings/);
  });
});

describe('batch worker: the barrier waits for no other record’s bookkeeping', () => {
  /**
   * A record that will not run (its job out of attempts at the claim, or its payload no longer
   * valid) runs the type's onFailure hook, up to 5 s. The claimed items' timeouts run meanwhile:
   * the handler call must not wait for that hook, or another record's hook eats their attempt.
   */
  it.each([
    [
      'a claim refused as exhausted',
      echoJob('other', {
        state: 'running',
        attempts: 3,
        leaseToken: 3,
        leaseOwner: 'dead-worker',
        leaseExpiresAt: T0 - 60_000, // and its clock-skew fence
      }),
    ],
    ['a claimed job whose payload no longer parses', echoJob('other', { payload: { n: 'not a number' } })],
  ])('calls the handler while %s is still in its onFailure hook', async (_what, other) => {
    const h = batchHarness(doubled);
    seedJobs(h.store, 1);
    h.store.seed(other);
    let called!: () => void;
    const handlerCalled = new Promise<'called'>((resolve) => {
      called = () => resolve('called');
    });
    const seenByHook: string[] = [];
    const def: BatchJobDefinition = {
      spec: batchSpec,
      runBatch: async (items) => {
        called();
        return items.map((i) => ({ ok: true, result: i.jobId }));
      },
      onFailure: async (_payload, info) => {
        // a hook that takes a while (an alert sent, say): 2 s here, within its 5 s limit
        const wait = new Promise<'still waiting'>((resolve) => setTimeout(() => resolve('still waiting'), 2000));
        seenByHook.push(`${info.jobId}: ${await Promise.race([handlerCalled, wait])}`);
      },
    };
    const worker = createBatchWorker(def, h.deps);

    await worker(eventOf(['job-1', 'other']));

    expect(seenByHook).toEqual(['other: called']);
    expect(h.store.peek('other')?.state).toBe('failed');
    expect(h.store.peek('job-1')).toMatchObject({ state: 'succeeded', attempts: 1, result: 'job-1' });
  });
});

describe('batch worker: a job never runs twice at once', () => {
  it('runs a job once when two messages of it come in one event; the duplicate is deleted', async () => {
    const h = batchHarness(doubled);
    seedJobs(h.store, 2);
    const event = sqsEvent(messageFor('job-1'), messageFor('job-2'), messageFor('job-1', { messageId: 'dup-1' }));

    expect(await h.worker(event)).toEqual({ batchItemFailures: [] });
    expect(h.calls.flatMap((c) => c.ids).sort()).toEqual(['job-1', 'job-2']);
    expect(h.store.peek('job-1')).toMatchObject({ state: 'succeeded', attempts: 1 });
  });

  it('runs a job in one of two concurrent invocations that both received it', async () => {
    const h = batchHarness(async (items) => {
      await new Promise((resolve) => setTimeout(resolve, 20)); // both invocations' claims are done by now
      return items.map((i) => ({ ok: true, result: i.jobId }));
    });
    seedJobs(h.store, 3);
    const first = sqsEvent(messageFor('job-1'), messageFor('job-2'));
    const second = sqsEvent(messageFor('job-2', { messageId: 'dup-2' }), messageFor('job-3'));

    const [a, b] = await Promise.all([h.worker(first), h.worker(second)]);

    expect(a).toEqual({ batchItemFailures: [] });
    expect(b).toEqual({ batchItemFailures: [] });
    expect(h.calls.flatMap((c) => c.ids).filter((id) => id === 'job-2')).toHaveLength(1);
    expect(h.store.peek('job-2')).toMatchObject({ state: 'succeeded', attempts: 1 });
  });
});
