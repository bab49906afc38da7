import { afterEach, describe, expect, it, vi } from 'vitest';
import * as zm from 'zod/mini';
import { MAX_RESULT_BYTES } from '../../shared/core/enqueue';
import { defineJobType } from '../../shared/core/job-type';
import { DependencyError, JobTimeoutError, LeaseLostError, PermanentError } from '../../shared/errors';
import type { FailureInfo } from '../../shared/runtime/job-definition';
import { sqsEvent } from '../support/fakes';
import { echoJob, harness, ISO0, logged, messageFor, T0 } from './worker-harness';

const waitForAbort = (signal: AbortSignal) =>
  new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

afterEach(() => {
  vi.useRealTimers();
});

describe('worker: timeouts and leases', () => {
  it('fails an attempt that runs past timeoutMs with reason timeout, aborting its signal', async () => {
    let signal: AbortSignal | undefined;
    const h = harness({
      run: (_p, ctx) => {
        signal = ctx.signal;
        return waitForAbort(ctx.signal);
      },
    });
    h.store.seed(echoJob('job-1'));

    const started = Date.now();
    const response = await h.worker(sqsEvent(messageFor('job-1')));

    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-job-1' }] });
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBeInstanceOf(JobTimeoutError);
    expect(h.store.peek('job-1')?.state).toBe('retrying');
    expect(h.store.peek('job-1')?.errors).toEqual([
      expect.objectContaining({
        reason: 'timeout',
        name: 'JobTimeoutError',
        message: 'job exceeded its timeout of 1000 ms',
      }),
    ]);
  });

  it("fires the timeout from the timer it is given (the in-memory mode's runs on its ManualClock)", async () => {
    const asked: number[] = [];
    let fire: (() => void) | undefined;
    const h = harness({
      timer: {
        after: (ms, fn) => {
          asked.push(ms);
          fire = fn;
          return () => {
            fire = undefined;
          };
        },
      },
      run: (_p, ctx) => waitForAbort(ctx.signal),
    });
    h.store.seed(echoJob('job-1'));

    const delivery = h.worker(sqsEvent(messageFor('job-1')));
    await vi.waitFor(() => expect(fire).toBeDefined());
    const firedAt = Date.now();
    fire?.();

    expect(await delivery).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-job-1' }] });
    expect(Date.now() - firedAt).toBeLessThan(500); // not the real second of timeoutMs
    expect(asked).toEqual([1000]);
    expect(fire).toBeUndefined(); // cancelled once the attempt ended
    expect(h.store.peek('job-1')?.errors[0]).toMatchObject({ reason: 'timeout', name: 'JobTimeoutError' });
  });

  it('ends the attempt at the timeout even when the handler ignores its signal, after its interval to stop', async () => {
    // lease 600 ms: a 200 ms heartbeat interval, which is the handler's time to stop
    const h = harness({ leaseMs: 600, run: () => new Promise(() => {}) });
    h.store.seed(echoJob('job-1'));

    await h.worker(sqsEvent(messageFor('job-1')));

    expect(h.store.peek('job-1')?.errors[0]?.reason).toBe('timeout');
    expect(
      logged(h.logs, 'the handler did not stop within a heartbeat interval of its abort signal; pass ctx.signal on'),
    ).toEqual([expect.objectContaining({ level: 'warn', waitedMs: 200 })]);
  });

  it('records a timed-out attempt only once its handler stopped, so the retry never overlaps it', async () => {
    let stoppedAt = 0;
    const h = harness({
      leaseMs: 3_000,
      run: (_payload, ctx) =>
        new Promise((_, reject) => {
          ctx.signal.addEventListener('abort', () => {
            // cleans up for 300 ms after the abort (within its 1 s heartbeat interval)
            setTimeout(() => {
              stoppedAt = Date.now();
              reject(ctx.signal.reason);
            }, 300);
          });
        }),
    });
    h.store.seed(echoJob('job-1'));
    const original = h.store.retry.bind(h.store);
    let retryWrittenAt = 0;
    h.store.retry = async (input) => {
      retryWrittenAt = Date.now();
      return original(input);
    };

    await h.worker(sqsEvent(messageFor('job-1')));

    expect(h.store.peek('job-1')?.state).toBe('retrying');
    expect(stoppedAt).toBeGreaterThan(0);
    expect(retryWrittenAt).toBeGreaterThanOrEqual(stoppedAt);
  });

  it('heartbeats while the handler runs: extends the lease and the message visibility', async () => {
    let leaseDuringRun: number | undefined;
    const h = harness({
      leaseMs: 300,
      run: async () => {
        h.clock.advance(50);
        await sleep(180);
        leaseDuringRun = h.store.peek('job-1')?.leaseExpiresAt;
        return 'done';
      },
    });
    h.store.seed(echoJob('job-1'));

    expect(await h.worker(sqsEvent(messageFor('job-1')))).toEqual({ batchItemFailures: [] });
    expect(leaseDuringRun).toBe(T0 + 50 + 300);
    expect(h.store.calls.filter((c) => c.method === 'heartbeat').length).toBeGreaterThanOrEqual(1);
    expect(h.queue.visibility[0]).toEqual({ queueUrl: expect.any(String), receiptHandle: 'rh-m-job-1', seconds: 3 });
  });

  it('aborts the handler, writes nothing and keeps the message when a heartbeat finds the lease taken over', async () => {
    let signal: AbortSignal | undefined;
    const h = harness({
      leaseMs: 300,
      run: (_p, ctx) => {
        signal = ctx.signal;
        // Another worker takes the job over (token 2) while this attempt (token 1) still runs.
        h.store.seed(
          echoJob('job-1', {
            state: 'running',
            attempts: 2,
            leaseToken: 2,
            leaseOwner: 'other',
            leaseExpiresAt: T0 + 60_000,
          }),
        );
        return waitForAbort(ctx.signal);
      },
    });
    h.store.seed(echoJob('job-1'));

    expect(await h.worker(sqsEvent(messageFor('job-1')))).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-job-1' }],
    });
    expect(signal?.reason).toBeInstanceOf(LeaseLostError);
    expect(h.store.peek('job-1')).toMatchObject({ state: 'running', leaseToken: 2, leaseOwner: 'other', errors: [] });
    // No write after the claim; one read decides the message is still needed (the job runs on).
    expect(h.store.calls.map((c) => c.method).filter((m) => m !== 'heartbeat')).toEqual(['claim', 'get']);
    expect(logged(h.logs, 'lease lost; aborting handler')[0]).toMatchObject({ token: 1 });
  });

  it('drops its result without reporting when the job was cancelled during the attempt', async () => {
    const h = harness({
      run: async () => {
        h.store.seed(echoJob('job-1', { state: 'cancelled', attempts: 1, leaseToken: 1, finishedAt: ISO0 }));
        return 'late';
      },
    });
    h.store.seed(echoJob('job-1'));

    expect(await h.worker(sqsEvent(messageFor('job-1')))).toEqual({ batchItemFailures: [] });
    expect(h.store.peek('job-1')?.state).toBe('cancelled');
    expect(h.store.peek('job-1')?.result).toBeUndefined();
    expect(logged(h.logs, 'late write rejected: the lease was taken over or the job changed')).toHaveLength(1);
  });
});

describe('worker: payloads, results and the store', () => {
  it('fails a job whose payload no longer matches the schema, without running it', async () => {
    const run = vi.fn(async () => 'x');
    const onFailure = vi.fn(async () => {});
    const h = harness({ run, onFailure });
    h.store.seed(echoJob('job-1', { payload: { n: 'two' } }));

    expect(await h.worker(sqsEvent(messageFor('job-1')))).toEqual({ batchItemFailures: [] });
    expect(run).not.toHaveBeenCalled();
    const job = h.store.peek('job-1');
    expect(job).toMatchObject({ state: 'failed', attempts: 1 });
    expect(job?.errors).toEqual([
      expect.objectContaining({ attempt: 1, reason: 'invalid_payload', name: 'PermanentError' }),
    ]);
    expect(job?.errors[0]?.message).toMatch(/^payload no longer matches the echo schema: /);
    expect(onFailure).toHaveBeenCalledTimes(1);
  });

  it('validates a payload schema built with zod/mini as one built with full zod', async () => {
    const spec = defineJobType({ type: 'echo', payload: zm.strictObject({ n: zm.number() }), timeoutMs: 1000 });
    const run = vi.fn(async (payload: unknown) => payload);
    const h = harness({ run, spec });
    h.store.seed(echoJob('job-1'));
    h.store.seed(echoJob('job-2', { payload: { n: 'two' } }));

    await h.worker(sqsEvent(messageFor('job-1'), messageFor('job-2')));
    expect(run).toHaveBeenCalledTimes(1);
    expect(h.store.peek('job-1')).toMatchObject({ state: 'succeeded', result: { n: 1 } });
    expect(h.store.peek('job-2')?.state).toBe('failed');
    expect(h.store.peek('job-2')?.errors[0]).toMatchObject({ reason: 'invalid_payload' });
    expect(h.store.peek('job-2')?.errors[0]?.message).toContain('Invalid input: expected number, received string');
  });

  it('keeps a result of exactly 64 KiB of JSON', async () => {
    const result = 'r'.repeat(MAX_RESULT_BYTES - 2);
    const h = harness({ run: async () => result });
    h.store.seed(echoJob('job-1'));

    await h.worker(sqsEvent(messageFor('job-1')));
    expect(h.store.peek('job-1')).toMatchObject({ state: 'succeeded', result });
  });

  it('fails a job whose result is larger than 64 KiB of JSON, keeping no result', async () => {
    const h = harness({ run: async () => ({ blob: 'r'.repeat(MAX_RESULT_BYTES) }) });
    h.store.seed(echoJob('job-1'));

    expect(await h.worker(sqsEvent(messageFor('job-1')))).toEqual({ batchItemFailures: [] });
    const job = h.store.peek('job-1');
    expect(job?.state).toBe('failed');
    expect(job?.result).toBeUndefined();
    expect(job?.errors).toEqual([
      expect.objectContaining({
        name: 'PermanentError',
        message: expect.stringMatching(/^result is \d+ bytes of JSON; the limit is 65536$/),
      }),
    ]);
  });

  it('reports the record when the store fails at claim, without running the handler', async () => {
    const run = vi.fn(async () => 'x');
    const h = harness({ run });
    h.store.seed(echoJob('job-1'));
    h.store.failNext('claim', new DependencyError('DynamoDB UpdateItem (claim) failed: InternalServerError: x'));

    expect(await h.worker(sqsEvent(messageFor('job-1')))).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-job-1' }],
    });
    expect(run).not.toHaveBeenCalled();
    expect(h.store.peek('job-1')).toMatchObject({ state: 'queued', attempts: 0, leaseToken: 0 });
    expect(logged(h.logs, 'could not process message; it will be delivered again')[0]).toMatchObject({
      level: 'error',
      messageId: 'm-job-1',
      errorName: 'DependencyError',
    });
  });

  it('moves the job to retrying when the handler throws an object JSON cannot encode', async () => {
    const h = harness({
      run: async () => {
        const circular: Record<string, unknown> = { code: 'LOOP' };
        circular.self = circular;
        throw circular;
      },
    });
    h.store.seed(echoJob('job-1'));

    await h.worker(sqsEvent(messageFor('job-1')));
    expect(h.store.peek('job-1')?.state).toBe('retrying');
  });

  it('fails the job when the handler returns a result JSON cannot encode', async () => {
    const h = harness({ run: async () => ({ count: 10n }) });
    h.store.seed(echoJob('job-1'));

    const response = await h.worker(sqsEvent(messageFor('job-1')));
    expect(h.store.peek('job-1')?.state).toBe('failed');
    expect(response).toEqual({ batchItemFailures: [] });
  });
});

describe('worker: onFailure', () => {
  const permanent = async () => Promise.reject(new PermanentError('no such user'));

  it('logs an onFailure that rejects; the job stays failed and is not reported', async () => {
    const onFailure = vi.fn(async () => Promise.reject(new Error('pager down')));
    const h = harness({ run: permanent, onFailure });
    h.store.seed(echoJob('job-1'));

    expect(await h.worker(sqsEvent(messageFor('job-1')))).toEqual({ batchItemFailures: [] });
    expect(h.store.peek('job-1')?.state).toBe('failed');
    expect(onFailure).toHaveBeenCalledTimes(1);
    expect(logged(h.logs, 'onFailure hook failed; not retried')).toEqual([
      expect.objectContaining({ level: 'error', errorMessage: 'pager down', jobId: 'job-1' }),
    ]);
  });

  it('gives up on an onFailure that hangs after 5 s and returns', async () => {
    vi.useFakeTimers();
    const onFailure = vi.fn((_p: unknown, _i: FailureInfo) => new Promise<void>(() => {}));
    const h = harness({ run: permanent, onFailure });
    h.store.seed(echoJob('job-1'));

    let settled = false;
    const pending = h.worker(sqsEvent(messageFor('job-1'))).finally(() => {
      settled = true;
    });
    await vi.advanceTimersByTimeAsync(4999);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);

    expect(await pending).toEqual({ batchItemFailures: [] });
    expect(h.store.peek('job-1')?.state).toBe('failed');
    expect(logged(h.logs, 'onFailure hook failed; not retried')[0]?.errorMessage).toBe('onFailure exceeded 5000 ms');
  });

  it('logs an onFailure that throws synchronously, without reporting the record', async () => {
    const onFailure = vi.fn((): Promise<void> => {
      throw new Error('sync boom');
    });
    const h = harness({ run: permanent, onFailure });
    h.store.seed(echoJob('job-1'));

    const response = await h.worker(sqsEvent(messageFor('job-1')));

    expect(h.store.peek('job-1')?.state).toBe('failed');
    expect(response).toEqual({ batchItemFailures: [] });
    expect(logged(h.logs, 'onFailure hook failed; not retried')[0]?.errorMessage).toBe('sync boom');
  });
});

describe('worker: leases it cannot confirm', () => {
  it('stops the handler before its lease runs out when heartbeats keep failing, and keeps the message', async () => {
    let signal: AbortSignal | undefined;
    const h = harness({
      leaseMs: 300,
      run: (_p, ctx) => {
        signal = ctx.signal;
        return waitForAbort(ctx.signal);
      },
    });
    h.store.seed(echoJob('job-1'));
    h.store.failNext('heartbeat', new DependencyError('503'), 10);
    const started = Date.now();
    const pending = h.worker(sqsEvent(messageFor('job-1')));
    // Time passes on the manual clock too; the lease (T0 + 300) is close to running out.
    setTimeout(() => h.clock.advance(250), 150);
    expect(await pending).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-job-1' }] });
    expect(signal?.reason).toBeInstanceOf(LeaseLostError);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(h.store.peek('job-1')).toMatchObject({ state: 'running', leaseToken: 1, errors: [] });
  });

  it('counts the first lease from the claim: a slow claim leaves less time, and the handler stops in time', async () => {
    let abortedAfterMs: number | undefined;
    let finished = false;
    const h = harness({
      leaseMs: 3_000, // heartbeat interval 1 s
      run: (_p, ctx) =>
        new Promise((resolve) => {
          const started = Date.now();
          ctx.signal.addEventListener('abort', () => {
            abortedAfterMs = Date.now() - started;
            resolve('stopped');
          });
          setTimeout(() => {
            finished = true;
            resolve('ran past its lease');
          }, 2_500);
        }),
    });
    h.store.seed(echoJob('job-1'));
    h.store.failNext('heartbeat', new DependencyError('503'), 10);
    // The claim's answer arrives 1.5 s after its clock reading: 1.5 s of the lease are left, so
    // the handler must stop 0.5 s from now, one heartbeat interval before the lease runs out.
    const claim = h.store.claim.bind(h.store);
    h.store.claim = async (input) => {
      const result = await claim(input);
      h.clock.advance(1_500);
      return result;
    };
    // From then on the worker's clock runs with real time.
    const follow = setInterval(() => h.clock.advance(25), 25);

    const response = await h.worker(sqsEvent(messageFor('job-1'))).finally(() => clearInterval(follow));
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-job-1' }] });
    expect(finished).toBe(false);
    expect(abortedAfterMs).toBeLessThanOrEqual(700);
  });

  it('does not start the handler when the claim’s answer came back with too little of the lease left', async () => {
    const run = vi.fn(async () => 'ran');
    const h = harness({ leaseMs: 3_000, run });
    h.store.seed(echoJob('job-1'));
    const claim = h.store.claim.bind(h.store);
    h.store.claim = async (input) => {
      const result = await claim(input);
      h.clock.advance(2_000); // 1 s of the 3 s lease left: less than 1¼ heartbeat intervals
      return result;
    };
    expect(await h.worker(sqsEvent(messageFor('job-1')))).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-job-1' }],
    });
    expect(run).not.toHaveBeenCalled();
    expect(h.store.peek('job-1')).toMatchObject({ state: 'running', attempts: 1, errors: [] });
  });
});
