import { describe, expect, it, vi } from 'vitest';
import { MAX_CLOCK_SKEW_MS } from '../../shared/core/lease';
import { ConfigError, PermanentError } from '../../shared/errors';
import type { JobContext } from '../../shared/runtime/job-definition';
import { createWorker } from '../../shared/runtime/worker';
import { FakeJobQueue, FakeJobStore, sqsEvent, sqsRecord, testConfig } from '../support/fakes';
import { EXPIRES_AT, echoJob, echoSpec, harness, ISO0, logged, messageFor, QUEUE_URL, T0 } from './worker-harness';

/** A lease that expired longer ago than the clock-skew bound: it may be taken over. */
const EXPIRED = T0 - MAX_CLOCK_SKEW_MS - 1;

describe('worker: success', () => {
  it('records the result, closes the lease and reports nothing', async () => {
    const contexts: JobContext[] = [];
    const h = harness({
      run: async (payload, ctx) => {
        contexts.push(ctx);
        return { doubled: (payload as { n: number }).n * 2 };
      },
    });
    h.store.seed(echoJob('job-1', { payload: { n: 21 } }));

    const response = await h.worker(sqsEvent(messageFor('job-1')));

    expect(response).toEqual({ batchItemFailures: [] });
    const job = h.store.peek('job-1');
    expect(job).toMatchObject({
      state: 'succeeded',
      result: { doubled: 42 },
      attempts: 1,
      leaseToken: 1,
      startedAt: ISO0,
      finishedAt: ISO0,
      expiresAt: EXPIRES_AT,
      errors: [],
    });
    expect(job?.leaseOwner).toBeUndefined();
    expect(job?.leaseExpiresAt).toBeUndefined();
    expect(contexts).toHaveLength(1);
    expect(contexts[0]).toMatchObject({ jobId: 'job-1', type: 'echo', attempt: 1, maxAttempts: 3, scheduledAt: ISO0 });
    expect(contexts[0]?.signal.aborted).toBe(false);
    expect(h.queue.visibility).toEqual([]);
    expect(logged(h.logs, 'job succeeded')).toEqual([
      expect.objectContaining({ level: 'info', jobId: 'job-1', messageId: 'm-job-1', attempt: 1, type: 'echo' }),
    ]);
  });

  it('reports only the failed record of a batch of three', async () => {
    const h = harness({
      run: async (payload) => {
        if ((payload as { n: number }).n === 2) throw new Error('two is unlucky');
        return 'ok';
      },
    });
    for (const [id, n] of [
      ['a', 1],
      ['b', 2],
      ['c', 3],
    ] as const)
      h.store.seed(echoJob(id, { payload: { n } }));

    const response = await h.worker(sqsEvent(messageFor('a'), messageFor('b'), messageFor('c')));

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-b' }] });
    expect(['a', 'b', 'c'].map((id) => h.store.peek(id)?.state)).toEqual(['succeeded', 'retrying', 'succeeded']);
  });

  it('takes over a running job whose lease expired and runs the next attempt', async () => {
    const seen: number[] = [];
    const h = harness({ run: async (_p, ctx) => seen.push(ctx.attempt) });
    h.store.seed(
      echoJob('job-1', { state: 'running', attempts: 1, leaseToken: 1, leaseOwner: 'dead', leaseExpiresAt: EXPIRED }),
    );

    expect(await h.worker(sqsEvent(messageFor('job-1')))).toEqual({ batchItemFailures: [] });
    expect(seen).toEqual([2]);
    expect(h.store.peek('job-1')).toMatchObject({ state: 'succeeded', attempts: 2, leaseToken: 2 });
  });
});

describe('worker: failed attempts', () => {
  it('moves the job to retrying, delays the message by the backoff and reports it', async () => {
    const h = harness({ run: async () => Promise.reject(new Error('upstream 502')) });
    h.store.seed(echoJob('job-1'));

    const response = await h.worker(sqsEvent(messageFor('job-1')));

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-job-1' }] });
    const job = h.store.peek('job-1');
    expect(job).toMatchObject({ state: 'retrying', attempts: 1, runAt: new Date(T0 + 2000).toISOString() });
    expect(job?.errors).toEqual([
      expect.objectContaining({ attempt: 1, at: ISO0, reason: 'error', name: 'Error', message: 'upstream 502' }),
    ]);
    expect(job?.leaseOwner).toBeUndefined();
    expect(h.queue.visibility).toEqual([{ queueUrl: QUEUE_URL, receiptHandle: 'rh-m-job-1', seconds: 2 }]);
    expect(logged(h.logs, 'attempt failed; will retry')[0]).toMatchObject({ level: 'warn', delayMs: 2000 });
  });

  it('uses the injected random for jittered backoff', async () => {
    const spec = {
      ...echoSpec,
      retry: {
        maxAttempts: 3,
        backoff: { kind: 'exponential' as const, baseMs: 4000, factor: 2, maxMs: 60_000, jitter: 'full' as const },
      },
    };
    const h = harness({ spec, random: () => 0.25, run: async () => Promise.reject(new Error('x')) });
    h.store.seed(echoJob('job-1', { attempts: 1, leaseToken: 1, state: 'retrying' }));

    await h.worker(sqsEvent(messageFor('job-1')));

    expect(h.queue.visibility[0]?.seconds).toBe(2);
    expect(h.store.peek('job-1')?.runAt).toBe(new Date(T0 + 2000).toISOString());
  });

  it('sends a fresh message carrying the retry delay when the visibility change fails', async () => {
    const h = harness({ run: async () => Promise.reject(new Error('x')) });
    h.queue.failNext('changeVisibility', new Error('SQS down'));
    h.store.seed(echoJob('job-1'));

    expect(await h.worker(sqsEvent(messageFor('job-1')))).toEqual({ batchItemFailures: [] });
    expect(h.store.peek('job-1')?.state).toBe('retrying');
    expect(h.queue.sent).toEqual([
      { queueUrl: expect.any(String), message: { v: 1, id: 'job-1', type: 'echo' }, delaySeconds: 2 },
    ]);
    expect(logged(h.logs, 'could not set the retry delay on the message; sending a new one')).toHaveLength(1);
  });

  it('fails the job on its last attempt, does not report it and calls onFailure once with the history', async () => {
    const onFailure = vi.fn(async () => {});
    const h = harness({ run: async () => Promise.reject(new Error('third strike')), onFailure });
    const earlier = [1, 2].map((attempt) => ({
      attempt,
      at: ISO0,
      reason: 'error',
      name: 'Error',
      message: `strike ${attempt}`,
    }));
    h.store.seed(
      echoJob('job-1', { state: 'retrying', attempts: 2, leaseToken: 2, errors: earlier, payload: { n: 7 } }),
    );

    const response = await h.worker(sqsEvent(messageFor('job-1')));

    expect(response).toEqual({ batchItemFailures: [] });
    const job = h.store.peek('job-1');
    expect(job).toMatchObject({ state: 'failed', attempts: 3, finishedAt: ISO0, expiresAt: EXPIRES_AT });
    expect(job?.errors.map((e) => e.message)).toEqual(['strike 1', 'strike 2', 'third strike']);
    expect(job?.lastError?.message).toBe('third strike');
    expect(onFailure).toHaveBeenCalledTimes(1);
    expect(onFailure).toHaveBeenCalledWith(
      { n: 7 },
      { jobId: 'job-1', type: 'echo', attempts: 3, errors: job?.errors },
    );
    expect(h.queue.visibility).toEqual([]);
    expect(logged(h.logs, 'job failed')[0]).toMatchObject({ level: 'error', attempts: 3, lastError: 'third strike' });
  });

  it('fails the job at once on a PermanentError', async () => {
    const onFailure = vi.fn(async () => {});
    const h = harness({ run: async () => Promise.reject(new PermanentError('user 9 does not exist')), onFailure });
    h.store.seed(echoJob('job-1'));

    expect(await h.worker(sqsEvent(messageFor('job-1')))).toEqual({ batchItemFailures: [] });
    const job = h.store.peek('job-1');
    expect(job).toMatchObject({ state: 'failed', attempts: 1 });
    expect(job?.errors).toEqual([
      expect.objectContaining({ name: 'PermanentError', message: 'user 9 does not exist', reason: 'error' }),
    ]);
    expect(onFailure).toHaveBeenCalledTimes(1);
  });

  it('fails a running job whose last attempt lost its lease (exhausted) without running it', async () => {
    const run = vi.fn(async () => 'never');
    const onFailure = vi.fn(async () => {});
    const h = harness({ run, onFailure });
    h.store.seed(echoJob('job-1', { state: 'running', attempts: 3, leaseToken: 3, leaseExpiresAt: EXPIRED }));

    expect(await h.worker(sqsEvent(messageFor('job-1')))).toEqual({ batchItemFailures: [] });
    expect(run).not.toHaveBeenCalled();
    expect(h.store.peek('job-1')?.state).toBe('failed');
    expect(h.store.peek('job-1')?.errors).toEqual([expect.objectContaining({ attempt: 3, reason: 'lease_expired' })]);
    expect(onFailure).toHaveBeenCalledTimes(1);
  });
});

describe('worker: duplicates and bad messages', () => {
  it('does not run a job running under a live lease, and does not report the duplicate', async () => {
    const run = vi.fn(async () => 'x');
    const h = harness({ run });
    h.store.seed(
      echoJob('job-1', {
        state: 'running',
        attempts: 1,
        leaseToken: 1,
        leaseOwner: 'other',
        leaseExpiresAt: T0 + 10_000,
      }),
    );
    const before = h.store.peek('job-1');

    expect(await h.worker(sqsEvent(messageFor('job-1', { receiveCount: 2 })))).toEqual({ batchItemFailures: [] });
    expect(run).not.toHaveBeenCalled();
    expect(h.store.peek('job-1')).toEqual(before);
    expect(logged(h.logs, 'duplicate delivery of a job running under a live lease; discarding it')).toEqual([
      expect.objectContaining({ jobId: 'job-1', messageId: 'm-job-1' }),
    ]);
  });

  it('keeps the attempt’s own message under a live lease, hidden until its lease may be taken over, then until the attempt must have ended', async () => {
    const run = vi.fn(async () => 'x');
    const h = harness({ run });
    h.store.seed(
      echoJob('job-1', {
        state: 'running',
        attempts: 1,
        leaseToken: 1,
        leaseOwner: 'other',
        leaseMessage: 'm-job-1',
        startedAt: ISO0,
        leaseExpiresAt: T0 + 10_000,
      }),
    );
    // Early returns: until the lease may be taken over (10 s + the 2 s skew margin) ...
    expect(await h.worker(sqsEvent(messageFor('job-1', { receiveCount: 2 })))).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-job-1' }],
    });
    // ... later ones: until the attempt must have ended (claimed at T0, timeout 1 s, Lambda's margin 30 s).
    await h.worker(sqsEvent(messageFor('job-1', { receiveCount: 4 })));
    expect(run).not.toHaveBeenCalled();
    expect(h.queue.visibility.map((v) => v.seconds)).toEqual([13, 31]);
  });

  it('refuses a lease too short to be renewed before it runs out', () => {
    expect(() => harness({ leaseMs: 200 })).toThrow(/leaseMs must be at least 300 ms/);
  });

  it.each(['succeeded', 'failed', 'cancelled'] as const)('does not run a %s job again', async (state) => {
    const run = vi.fn(async () => 'x');
    const h = harness({ run });
    h.store.seed(echoJob('job-1', { state, attempts: 1, leaseToken: 1 }));
    const before = h.store.peek('job-1');

    expect(await h.worker(sqsEvent(messageFor('job-1')))).toEqual({ batchItemFailures: [] });
    expect(run).not.toHaveBeenCalled();
    expect(h.store.peek('job-1')).toEqual(before);
    expect(logged(h.logs, 'duplicate delivery of a finished job; discarding it')[0]?.state).toBe(state);
  });

  it('discards a message whose job no longer exists', async () => {
    const h = harness();
    expect(await h.worker(sqsEvent(messageFor('gone')))).toEqual({ batchItemFailures: [] });
    expect(logged(h.logs, 'no job for this message (expired or never written); discarding it')).toHaveLength(1);
  });

  it.each([
    ['not JSON', 'not json'],
    ['the wrong version', JSON.stringify({ v: 2, id: 'job-1', type: 'echo' })],
    ['an empty id', JSON.stringify({ v: 1, id: '', type: 'echo' })],
    ['an array', '[1,2]'],
  ])('leaves a message that is %s for the DLQ and logs its id', async (_label, body) => {
    const run = vi.fn(async () => 'x');
    const h = harness({ run });
    h.store.seed(echoJob('job-1'));

    const response = await h.worker(sqsEvent(sqsRecord(body, { messageId: 'm-bad', receiveCount: 4 })));

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-bad' }] });
    expect(run).not.toHaveBeenCalled();
    expect(h.store.calls).toEqual([]);
    expect(logged(h.logs, 'malformed or misrouted message; leaving it for the DLQ')).toEqual([
      expect.objectContaining({ level: 'error', messageId: 'm-bad', receiveCount: 4, reason: 'not a job message' }),
    ]);
  });

  it('leaves a message of another type for the DLQ without claiming the job', async () => {
    const run = vi.fn(async () => 'x');
    const h = harness({ run });
    h.store.seed(echoJob('job-1'));

    const response = await h.worker(sqsEvent(messageFor('job-1', { type: 'sleep', messageId: 'm-x' })));

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-x' }] });
    expect(run).not.toHaveBeenCalled();
    expect(h.store.peek('job-1')?.state).toBe('queued');
    expect(logged(h.logs, 'malformed or misrouted message; leaving it for the DLQ')[0]?.reason).toBe(
      'type sleep on the echo queue',
    );
  });
});

describe('createWorker', () => {
  it('refuses to build a worker for a type without a route', () => {
    const build = () =>
      createWorker(
        { spec: echoSpec, run: async () => null, onFailure: undefined },
        { config: testConfig(['sleep']), store: new FakeJobStore(), queue: new FakeJobQueue() },
      );
    expect(build).toThrow(ConfigError);
    expect(build).toThrow('no route configured for job type "echo"');
  });
});
