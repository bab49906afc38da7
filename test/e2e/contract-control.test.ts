import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobViewSchema } from '../../shared/api/schemas';
import { call, callError, getJob, isLocal, uniqueId, waitFor, waitForJob } from './contract-helpers';
import { type E2ETarget, startTarget } from './target';

let target: E2ETarget;

beforeAll(async () => {
  target = await startTarget();
});

afterAll(async () => {
  await target?.stop();
});

const enqueue = (body: Record<string, unknown>) => call(target, 'POST', '/jobs', 201, jobViewSchema, body);
const cancel = (id: string) => call(target, 'POST', `/jobs/${id}/cancel`, 200, jobViewSchema);
const retry = (id: string) => call(target, 'POST', `/jobs/${id}/retry`, 200, jobViewSchema);

describe('POST /jobs/{id}/cancel', () => {
  it('cancels a scheduled job and deletes its one-time schedule', async () => {
    const job = await enqueue({ type: 'echo', payload: {}, runAt: new Date(Date.now() + 2 * 3600_000).toISOString() });
    expect(job.state).toBe('scheduled');
    expect(await target.scheduleNames()).toContain(job.id);
    const cancelled = await cancel(job.id);
    expect(cancelled).toMatchObject({ id: job.id, state: 'cancelled', attempts: 0 });
    expect(Date.parse(cancelled.finishedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(job.createdAt));
    expect(await target.scheduleNames()).not.toContain(job.id);
    expect((await getJob(target, job.id)).state).toBe('cancelled');
  });

  it('cancels a queued job; its delayed message is discarded later', async () => {
    const job = await enqueue({ type: 'echo', payload: { q: 1 }, delaySeconds: 900 });
    expect(job.state).toBe('queued');
    const cancelled = await cancel(job.id);
    expect(cancelled.state).toBe('cancelled');
    expect(cancelled.result).toBeNull();
  });

  it('cancels a retrying job between attempts; no further attempt runs', async () => {
    const job = await enqueue({
      type: 'flaky',
      payload: { failTimes: 50 },
      maxAttempts: 5,
      backoff: { kind: 'constant', delayMs: 600_000 },
    });
    const retrying = await waitForJob(target, job.id, ['retrying']);
    expect(retrying.attempts).toBe(1);
    const cancelled = await cancel(job.id);
    expect(cancelled).toMatchObject({ state: 'cancelled', attempts: 1 });
    expect(cancelled.errors).toHaveLength(1);
  });

  it('cancels a running job: the handler is aborted at its next heartbeat, and it is not retried', async () => {
    // Messages other tests left in the queue (a deployed stack is shared: a job delayed 15 min
    // stays there) count in the depth; this test waits for its own message to go.
    const total = (d: { visible: number; inFlight: number; delayed: number }) => d.visible + d.inFlight + d.delayed;
    const before = await target.queueDepth('sleep');
    const job = await enqueue({ type: 'sleep', payload: { ms: 120_000 } });
    await waitForJob(target, job.id, ['running']);
    await waitFor('the sleep message in flight', async () =>
      (await target.queueDepth('sleep')).inFlight === before.inFlight + 1 ? true : undefined,
    );
    const cancelledAt = Date.now();
    const cancelled = await cancel(job.id);
    expect(cancelled).toMatchObject({ state: 'cancelled', attempts: 1 });

    // The worker's next heartbeat (a third of the 30 s lease) is refused: it aborts the
    // handler and deletes the message, long before the 120 s sleep would have ended.
    await waitFor(
      'the sleep message to be deleted',
      async () => {
        const depth = await target.queueDepth('sleep');
        return total(depth) === total(before) ? true : undefined;
      },
      60_000,
    );
    // Well before the 120 s sleep would end (SQS counts may lag a little in AWS).
    expect(Date.now() - cancelledAt).toBeLessThan(isLocal ? 20_000 : 60_000);
    const after = await getJob(target, job.id);
    expect(after).toMatchObject({ state: 'cancelled', attempts: 1, errors: [], result: null });
    expect(after.finishedAt).toBe(cancelled.finishedAt);
  }, 90_000);

  it('answers 409 illegal_state with the current state for a finished job', async () => {
    const job = await enqueue({ type: 'echo', payload: { done: true } });
    await waitForJob(target, job.id, ['succeeded']);
    const error = await callError(target, 'POST', `/jobs/${job.id}/cancel`, 409, 'illegal_state');
    expect(error.state).toBe('succeeded');
    const cancelled = await enqueue({ type: 'echo', payload: {}, delaySeconds: 900 });
    await cancel(cancelled.id);
    expect((await callError(target, 'POST', `/jobs/${cancelled.id}/cancel`, 409, 'illegal_state')).state).toBe(
      'cancelled',
    );
  });

  it('answers 404 job_not_found for an unknown job', async () => {
    await callError(target, 'POST', `/jobs/${uniqueId('nope')}/cancel`, 404, 'job_not_found');
  });
});

describe('POST /jobs/{id}/retry', () => {
  it('retries a failed job as a new series of attempts, keeping its error history', async () => {
    const job = await enqueue({ type: 'flaky', payload: { failTimes: 1 }, maxAttempts: 1 });
    const failed = await waitForJob(target, job.id, ['failed']);
    expect(failed.attempts).toBe(1);
    const retried = await retry(job.id);
    expect(retried).toMatchObject({ state: 'queued', attempts: 0, retries: 1, finishedAt: null });
    expect(retried.errors).toHaveLength(1);
    // flaky fails its first attempt of a series, so the new series fails again: a second error.
    const again = await waitForJob(target, job.id, ['failed'], 20_000);
    expect(again).toMatchObject({ attempts: 1, retries: 1 });
    expect(again.errors.map((e) => e.attempt)).toEqual([1, 1]);
  });

  it('retries a cancelled job: it runs now, not at its old delay', async () => {
    const job = await enqueue({ type: 'echo', payload: { back: true }, delaySeconds: 900 });
    await cancel(job.id);
    const retried = await retry(job.id);
    expect(retried.state).toBe('queued');
    const done = await waitForJob(target, job.id, ['succeeded']);
    expect(done).toMatchObject({ attempts: 1, retries: 1, result: { back: true } });
  });

  it('answers 409 illegal_state for a job that has not ended or succeeded', async () => {
    const queued = await enqueue({ type: 'echo', payload: {}, delaySeconds: 900 });
    expect((await callError(target, 'POST', `/jobs/${queued.id}/retry`, 409, 'illegal_state')).state).toBe('queued');
    const done = await enqueue({ type: 'echo', payload: {} });
    await waitForJob(target, done.id, ['succeeded']);
    expect((await callError(target, 'POST', `/jobs/${done.id}/retry`, 409, 'illegal_state')).state).toBe('succeeded');
    await callError(target, 'POST', `/jobs/${uniqueId('nope')}/retry`, 404, 'job_not_found');
  });
});
