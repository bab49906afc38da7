import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { defineJobType } from '../../shared/core/job-type';
import { retryScheduleName } from '../../shared/core/ports';
import { ConfigError, DependencyError, ThrottledError } from '../../shared/errors';
import { PROGRESS_MIN_INTERVAL_MS } from '../../shared/runtime/attempt-support';
import { sqsEvent, sqsRecord } from '../support/fakes';
import { echoJob, harness, logged, messageFor, T0 } from './worker-harness';

afterEach(() => {
  vi.useRealTimers();
});

describe('worker: progress', () => {
  it('writes the first report at once and coalesces later ones to one write per interval', async () => {
    const h = harness({
      run: async (_payload, ctx) => {
        ctx.progress(10, 'starting');
        ctx.progress(20);
        ctx.progress(30, 'x'.repeat(500));
        await new Promise((resolve) => setTimeout(resolve, 50));
        return 'ok';
      },
    });
    h.store.seed(echoJob('p1'));
    await h.worker(sqsEvent(messageFor('p1')));
    const writes = h.store.calls.filter((c) => c.method === 'progress');
    expect(writes).toHaveLength(1); // 20 and 30 wait for the interval; the attempt ended first
    expect(h.store.peek('p1')?.progress).toEqual({ percent: 10, detail: 'starting', at: new Date(T0).toISOString() });
    expect(h.store.peek('p1')?.state).toBe('succeeded');
  });

  it('writes again once the interval has passed, truncating the detail', async () => {
    const h = harness({
      run: async (_payload, ctx) => {
        ctx.progress(10);
        h.clock.advance(PROGRESS_MIN_INTERVAL_MS);
        ctx.progress(55, 'y'.repeat(500));
        await new Promise((resolve) => setTimeout(resolve, 20));
        return 'ok';
      },
    });
    h.store.seed(echoJob('p2'));
    await h.worker(sqsEvent(messageFor('p2')));
    expect(h.store.calls.filter((c) => c.method === 'progress')).toHaveLength(2);
    const progress = h.store.peek('p2')?.progress;
    expect(progress?.percent).toBe(55);
    expect(progress?.detail).toHaveLength(200);
  });

  it('rejects a progress value outside 0–100 by failing the attempt', async () => {
    const h = harness({
      run: async (_payload, ctx) => {
        ctx.progress(150);
        return 'never';
      },
    });
    h.store.seed(echoJob('p3'));
    await h.worker(sqsEvent(messageFor('p3')));
    expect(h.store.peek('p3')?.state).toBe('retrying');
    expect(h.store.peek('p3')?.errors[0]?.message).toBe('progress must be a number from 0 to 100 (got 150)');
  });
});

describe('worker: ctx.parents() without a job graph', () => {
  it('is always there, and rejects with a ConfigError naming the missing graph; the attempt fails', async () => {
    let caught: unknown;
    const h = harness({
      run: async (_payload, ctx) => {
        try {
          return await ctx.parents();
        } catch (error) {
          caught = error;
          throw error;
        }
      },
    });
    h.store.seed(echoJob('g1'));
    await h.worker(sqsEvent(messageFor('g1')));
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as Error).message).toMatch(
      /^ctx\.parents\(\) needs a job graph, and this worker has none: pass `graph` to createWorker/,
    );
    const job = h.store.peek('g1');
    expect(job?.state).toBe('retrying'); // a configuration that a redeploy fixes: the retry policy applies
    expect(job?.errors[0]).toMatchObject({ name: 'ConfigError', message: (caught as Error).message });
  });
});

/**
 * Makes each progress write of `h` land `delayMs` after it was sent (a slow request: the store
 * applies it, or refuses it, only then).
 */
function lateProgress(h: ReturnType<typeof harness>, delayMs: number): void {
  const land = h.store.progress.bind(h.store);
  h.store.progress = async (input) => {
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    return land(input);
  };
}

describe('worker: a progress write still in flight when the handler ends', () => {
  it('lands before the success write: no lease-lost warning, no abort, no extra write', async () => {
    let signal: AbortSignal | undefined;
    const h = harness({
      run: async (_payload, ctx) => {
        signal = ctx.signal;
        ctx.progress(100, 'done');
        return 'ok';
      },
    });
    lateProgress(h, 30);
    h.store.seed(echoJob('p-late'));
    await h.worker(sqsEvent(messageFor('p-late')));
    await new Promise((resolve) => setTimeout(resolve, 60)); // a refusal would land by now
    const ends = h.store.calls.filter((c) => c.method === 'progress' || c.method === 'succeed');
    expect(ends.map((c) => c.method)).toEqual(['progress', 'succeed']);
    expect(logged(h.logs, 'lease lost; aborting handler')).toEqual([]);
    expect(signal?.aborted).toBe(false);
    expect(h.store.peek('p-late')?.state).toBe('succeeded');
    expect(h.store.peek('p-late')?.progress?.percent).toBe(100);
  });

  it('is waited for at most a heartbeat interval, and its late refusal is not taken for a lost lease', async () => {
    const h = harness({
      leaseMs: 300, // a 100 ms heartbeat interval
      run: async (_payload, ctx) => {
        ctx.progress(50);
        return 'ok';
      },
    });
    lateProgress(h, 400);
    h.store.seed(echoJob('p-hung'));
    await h.worker(sqsEvent(messageFor('p-hung')));
    expect(h.store.peek('p-hung')?.state).toBe('succeeded');
    await new Promise((resolve) => setTimeout(resolve, 450)); // the refused progress write has landed
    expect(h.store.calls.filter((c) => c.method === 'progress')).toHaveLength(1);
    expect(logged(h.logs, 'lease lost; aborting handler')).toEqual([]);
    expect(logged(h.logs, 'could not record progress')).toEqual([]);
  });
});

describe('worker: a message sent ahead of its job', () => {
  it('is hidden until its notBefore without a claim (no write), then claimed when it returns', async () => {
    const h = harness({ run: async () => 'ok' });
    const runAt = T0 + 61_500;
    h.store.seed({ ...echoJob('ahead'), state: 'scheduled', runAt: new Date(runAt).toISOString() });
    const record = sqsRecord(
      { v: 1, id: 'ahead', type: 'echo', notBefore: new Date(runAt).toISOString() },
      { messageId: 'm-ahead', receiveCount: 1 },
    );
    expect(await h.worker(sqsEvent(record))).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-ahead' }] });
    expect(h.store.calls.filter((c) => c.method === 'claim')).toEqual([]);
    expect(h.queue.visibility.map((v) => v.seconds)).toEqual([61]); // rounded down: the claim takes 1 s early
    h.clock.advance(61_000);
    await h.worker(sqsEvent(record));
    expect(h.store.peek('ahead')?.state).toBe('succeeded');
  });
});

describe('worker: retry delays', () => {
  const longBackoff = defineJobType({
    type: 'echo',
    payload: z.object({ n: z.number() }),
    timeoutMs: 1000,
    retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 24 * 3600_000 } },
  });

  it('hands a retry delay over 12 h to a one-time schedule and finishes the message', async () => {
    const h = harness({ spec: longBackoff, withScheduler: true, run: async () => Promise.reject(new Error('later')) });
    h.store.seed(echoJob('long'));
    const response = await h.worker(sqsEvent(messageFor('long')));
    expect(response.batchItemFailures).toEqual([]);
    expect(h.queue.visibility).toEqual([]);
    const schedule = h.scheduler.schedules.get(retryScheduleName('long', 1));
    expect(schedule?.fireAt).toBe(T0 + 24 * 3600_000);
    // it names the retry's runAt: the worker hides it without a claim if it arrives early
    expect(schedule?.message).toEqual({
      v: 1,
      id: 'long',
      type: 'echo',
      notBefore: new Date(T0 + 24 * 3600_000).toISOString(),
    });
    expect(h.store.peek('long')?.state).toBe('retrying');
    expect(h.store.peek('long')?.runAt).toBe(new Date(T0 + 24 * 3600_000).toISOString());
  });

  it('caps a retry delay at the visibility SQS allows after a receive when no scheduler is configured', async () => {
    const h = harness({ spec: longBackoff, run: async () => Promise.reject(new Error('later')) });
    h.store.seed(echoJob('capped'));
    const response = await h.worker(sqsEvent(messageFor('capped')));
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'm-capped' }]);
    expect(h.queue.visibility.map((v) => v.seconds)).toEqual([42_000]);
  });

  it('uses the backoff given at enqueue instead of the job type policy', async () => {
    const h = harness({ run: async () => Promise.reject(new Error('again')) });
    h.store.seed(echoJob('custom', { backoff: { kind: 'constant', delayMs: 7000 } }));
    await h.worker(sqsEvent(messageFor('custom')));
    expect(h.queue.visibility.map((v) => v.seconds)).toEqual([7]);
  });
});

describe('worker: recording outcomes survives transient failures', () => {
  it('tries the success write again after throttling and dependency failures', async () => {
    const h = harness();
    h.store.seed(echoJob('flaky-store'));
    h.store.failNext('succeed', new ThrottledError('slow down'));
    h.store.failNext('succeed', new DependencyError('503'));
    const response = await h.worker(sqsEvent(messageFor('flaky-store')));
    expect(response.batchItemFailures).toEqual([]);
    expect(h.store.peek('flaky-store')?.state).toBe('succeeded');
    expect(h.store.calls.filter((c) => c.method === 'succeed')).toHaveLength(3);
  });

  it('gives up after four tries and leaves the message for redelivery', async () => {
    const h = harness();
    h.store.seed(echoJob('down'));
    for (let i = 0; i < 4; i++) h.store.failNext('succeed', new DependencyError('503'));
    const response = await h.worker(sqsEvent(messageFor('down')));
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'm-down' }]);
    expect(h.store.peek('down')?.state).toBe('running');
  }, 10_000);
});

describe('retryScheduleName', () => {
  it('is stable, at most 64 characters, and never a valid job id', () => {
    expect(retryScheduleName('job-1', 3)).toBe('_r3.job-1');
    const long = 'a'.repeat(64);
    const name = retryScheduleName(long, 12);
    expect(name.length).toBeLessThanOrEqual(64);
    expect(name).toMatch(/^_r12\.a+\.[0-9a-f]{8}$/);
    expect(retryScheduleName(`${'a'.repeat(63)}b`, 12)).not.toBe(name);
  });
});
