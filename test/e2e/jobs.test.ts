import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueue, getJob, uniqueId, waitForState } from './helpers';
import { type E2ETarget, onMoto, standInTest, startTarget } from './target';

let target: E2ETarget;

beforeAll(async () => {
  target = await startTarget();
});

afterAll(async () => {
  await target?.stop();
});

describe('jobs run end to end', () => {
  it('runs an immediate echo job to succeeded with its payload as result', async () => {
    const payload = { hello: 'world', n: 42, nested: { list: [1, 2, 3] } };
    const { status, job } = await enqueue(target, { type: 'echo', payload });
    expect(status).toBe(201);
    expect(job.type).toBe('echo');
    expect(job.state).toBe('queued');
    expect(job.attempts).toBe(0);
    const done = await waitForState(target, job.id, ['succeeded', 'failed']);
    expect(done.state).toBe('succeeded');
    expect(done.result).toEqual(payload);
    expect(done.attempts).toBe(1);
    expect(Date.parse(done.finishedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(done.createdAt));
  });

  it('holds an SQS-delayed job until its delay passes, then runs it', async () => {
    const { status, job } = await enqueue(target, { type: 'echo', payload: { delayed: true }, delaySeconds: 2 });
    expect(status).toBe(201);
    expect(Date.parse(job.runAt) - Date.parse(job.createdAt)).toBe(2000);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect((await getJob(target, job.id)).state).toBe('queued');
    const done = await waitForState(target, job.id, ['succeeded']);
    expect(Date.parse(done.startedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(job.createdAt) + 2000 - 50);
  });

  it('retries a flaky job until it succeeds, counting attempts', async () => {
    const { job } = await enqueue(target, { type: 'flaky', payload: { failTimes: 2 } });
    const done = await waitForState(target, job.id, ['succeeded', 'failed'], 30_000);
    expect(done.state).toBe('succeeded');
    expect(done.attempts).toBe(3);
    expect(done.result).toEqual({ succeededOnAttempt: 3 });
    expect(done.errors.map((e) => e.attempt)).toEqual([1, 2]);
  });

  it('fails a job that always fails after exactly maxAttempts attempts', async () => {
    const { job } = await enqueue(target, { type: 'flaky', payload: { failTimes: 50 }, maxAttempts: 2 });
    expect(job.maxAttempts).toBe(2);
    const done = await waitForState(target, job.id, ['failed', 'succeeded'], 30_000);
    expect(done.state).toBe('failed');
    expect(done.attempts).toBe(2);
    expect(done.lastError?.message).toContain('attempt 2');
    expect(done.errors).toHaveLength(2);
  });

  it('is idempotent by id: same payload → 200 with the same job, different payload → 409', async () => {
    const id = uniqueId('idem');
    const first = await enqueue(target, { id, type: 'echo', payload: { a: 1, b: 2 } });
    expect(first.status).toBe(201);
    const again = await enqueue(target, { id, type: 'echo', payload: { b: 2, a: 1 } });
    expect(again.status).toBe(200);
    expect(again.job.id).toBe(id);
    expect(again.job.createdAt).toBe(first.job.createdAt);
    const conflict = await target.request('POST', '/jobs', { id, type: 'echo', payload: { a: 2 } });
    expect(conflict.status).toBe(409);
    const body = (await conflict.json()) as { error: { code: string } };
    expect(body.error.code).toBe('id_conflict');
    const done = await waitForState(target, id, ['succeeded']);
    expect(done.result).toEqual({ a: 1, b: 2 });
  });
});

const farFuture = standInTest(
  'creates a one-time schedule, shows scheduled, and runs when the Scheduler clock reaches runAt',
);

describe.runIf(process.env.ORRERY_E2E_OUTPUTS === undefined)('far-future jobs (local Scheduler clock)', () => {
  // Needs the Scheduler stand-in (moves its clock, waits for its fire): skipped on moto only.
  it.skipIf(onMoto)(farFuture, async () => {
    const runAt = new Date(Date.now() + 2 * 3600_000).toISOString();
    const { status, job } = await enqueue(target, { type: 'echo', payload: { later: true }, runAt });
    expect(status).toBe(201);
    expect(job.state).toBe('scheduled');
    expect(await target.scheduleNames()).toContain(job.id);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await getJob(target, job.id)).state).toBe('scheduled');

    await target.advanceSchedulerClock?.(3600_000);
    expect((await getJob(target, job.id)).state).toBe('scheduled');
    await target.advanceSchedulerClock?.(2 * 3600_000 + 1000);
    const done = await waitForState(target, job.id, ['succeeded']);
    expect(done.result).toEqual({ later: true });
    expect(await target.scheduleNames()).not.toContain(job.id); // ActionAfterCompletion DELETE
  });
});
