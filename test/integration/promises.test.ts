import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ControlService } from '../../shared/api/control-service';
import { JobsService } from '../../shared/api/jobs-service';
import { DynamoJobControl } from '../../shared/aws/dynamo-job-control';
import { DynamoJobStore } from '../../shared/aws/dynamo-job-store';
import { DynamoScheduleStore } from '../../shared/aws/dynamo-schedule-store';
import { ManualClock } from '../../shared/core/clock';
import { runId } from '../../shared/core/fire-message';
import type { Job } from '../../shared/core/job';
import { defineJobType } from '../../shared/core/job-type';
import { MAX_CLOCK_SKEW_MS } from '../../shared/core/lease';
import { payloadHash } from '../../shared/core/payload-hash';
import type { JobQueue, JobStore } from '../../shared/core/ports';
import { DependencyError, LeaseLostError } from '../../shared/errors';
import { createLogger } from '../../shared/logger';
import { defineJob } from '../../shared/runtime/define-job';
import { createWorker } from '../../shared/runtime/worker';
import { processFire } from '../../shared/schedules/fire-processor';
import type { Schedule } from '../../shared/schedules/model';
import { useJobTable } from '../local-aws/job-table';
import { newJob as baseJob, FakeJobQueue, FakeJobScheduler, sqsEvent, sqsRecord, testConfig } from '../support/fakes';

const { dynamo, tableName } = useJobTable('promises');
const store = new DynamoJobStore(dynamo, tableName);
const control = new DynamoJobControl(dynamo, tableName);
const schedules = new DynamoScheduleStore(dynamo, tableName);
const log = createLogger({ level: 'silent' });
const config = testConfig(['echo']);
const echo = defineJobType({ type: 'echo', payload: z.object({ n: z.number() }), retry: { maxAttempts: 3 } });
const T0 = Date.parse('2026-06-01T00:00:00Z');
const LEASE = 30_000;
let seq = 0;

function newJob(overrides: Partial<Job> = {}, now = T0): Job {
  seq += 1;
  const payload = { n: seq };
  return baseJob(
    { id: `p-${seq}`, type: 'echo', payload, payloadHash: payloadHash('echo', payload), ...overrides },
    now,
  );
}

async function claimed(job: Pick<Job, 'id' | 'type'>, owner: string, now: number, leaseMs = LEASE): Promise<Job> {
  const result = await store.claim({ id: job.id, type: job.type, owner, now, leaseMs });
  if (result.kind !== 'claimed') throw new Error(`expected a claim, got ${result.kind}`);
  return result.job;
}

describe('hole 1: an acknowledged job is never deleted', () => {
  it('keeps the job when the first request’s send fails after a replay was acknowledged', async () => {
    const clock = new ManualClock(T0);
    let releaseA: () => void = () => {};
    const aMayFail = new Promise<void>((resolve) => {
      releaseA = resolve;
    });
    let aSendStarted: () => void = () => {};
    const aSending = new Promise<void>((resolve) => {
      aSendStarted = resolve;
    });
    const sent: string[] = [];
    // Request A's send hangs in SDK retries, then fails; request B's send goes through.
    const hangingQueue: JobQueue = {
      send: async () => {
        aSendStarted();
        await aMayFail;
        throw new DependencyError('SQS SendMessage failed after retries');
      },
      sendBatch: async () => {
        throw new Error('not used: single enqueues send one message');
      },
      changeVisibility: async () => {},
    };
    const workingQueue: JobQueue = {
      send: async (_url, message) => {
        sent.push(message.id);
      },
      sendBatch: async () => {
        throw new Error('not used: single enqueues send one message');
      },
      changeVisibility: async () => {},
    };
    const service = (queue: JobQueue) =>
      new JobsService({ config, catalog: [echo], store, queue, scheduler: new FakeJobScheduler(), clock, log });
    const request = { id: `ack-${++seq}`, type: 'echo', payload: { n: 1 } };

    const a = service(hangingQueue).enqueue(request);
    await aSending;
    const b = await service(workingQueue).enqueue(request);
    expect(b.created).toBe(false);
    expect(sent).toEqual([request.id]);
    releaseA();
    await expect(a).rejects.toBeInstanceOf(DependencyError);

    // B answered 200: the job must still be there for B's message.
    expect((await store.get(request.id))?.state).toBe('queued');
  });

  it('keeps a new job whose only send failed, so a retry of the request (or the supervisor) dispatches it', async () => {
    const clock = new ManualClock(T0);
    const failing: JobQueue = {
      send: async () => {
        throw new DependencyError('SQS SendMessage failed after retries');
      },
      sendBatch: async () => {
        throw new Error('not used: single enqueues send one message');
      },
      changeVisibility: async () => {},
    };
    const jobs = new JobsService({
      config,
      catalog: [echo],
      store,
      queue: failing,
      scheduler: new FakeJobScheduler(),
      clock,
      log,
    });
    const id = `ack-${++seq}`;
    const error = await jobs.enqueue({ id, type: 'echo', payload: { n: 2 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DependencyError);
    expect(error).toMatchObject({ details: { jobId: id } });
    expect((await store.get(id))?.state).toBe('queued');
  });
});

describe('hole 2: cancel, then retry, of a running job does not start a second handler', () => {
  it('refuses to claim the restarted job while the cancelled attempt’s lease may still run', async () => {
    const clock = new ManualClock(T0);
    const job = newJob();
    await store.create(job);
    const first = await claimed(job, 'worker-a', T0);
    const services = new ControlService({
      config,
      catalog: [echo],
      store,
      control,
      queue: new FakeJobQueue(),
      scheduler: new FakeJobScheduler(),
      clock,
      log,
    });
    clock.advance(1_000);
    await services.cancel(job.id);
    clock.advance(1_000);
    await services.retry(job.id);

    const early = await store.claim({ id: job.id, type: 'echo', owner: 'worker-b', now: clock.now(), leaseMs: LEASE });
    expect(early.kind).toBe('fenced');
    // Once the old lease (plus the skew margin) has run out, the new series starts.
    const after = (first.leaseExpiresAt ?? 0) + MAX_CLOCK_SKEW_MS + 1;
    const next = await claimed(job, 'worker-b', after);
    expect(next).toMatchObject({ state: 'running', attempts: 1, leaseToken: first.leaseToken + 1 });
  });
});

describe('hole 3: a job that is not due yet never starts early', () => {
  it('refuses to claim a retrying job before its backoff ends', async () => {
    const job = newJob();
    await store.create(job);
    const first = await claimed(job, 'w1', T0);
    const runAt = T0 + 2 * 3600_000;
    await store.retry({ job: first, now: T0 + 10, runAt, errors: [], expiresAt: 2e9, writer: 'w1' });
    const result = await store.claim({ id: job.id, type: 'echo', owner: 'w2', now: T0 + 900_000, leaseMs: LEASE });
    expect(result.kind).toBe('early');
    expect(await claimed(job, 'w2', runAt)).toMatchObject({ attempts: 2 });
  });

  it('refuses to claim a queued job whose SQS delay has not passed (a duplicate delivered early)', async () => {
    const job = newJob({ runAt: new Date(T0 + 600_000).toISOString() });
    await store.create(job);
    expect((await store.claim({ id: job.id, type: 'echo', owner: 'w', now: T0, leaseMs: LEASE })).kind).toBe('early');
  });

  it('hides an early message for the rest of the backoff instead of running the attempt', async () => {
    const job = newJob();
    await store.create(job);
    const first = await claimed(job, 'w1', T0);
    const runAt = T0 + 24 * 3600_000;
    await store.retry({ job: first, now: T0 + 10, runAt, errors: [], expiresAt: 2e9, writer: 'w1' });
    const queue = new FakeJobQueue();
    let ran = 0;
    const def = defineJob(echo, async () => {
      ran += 1;
    });
    const worker = createWorker(def, { config, store, queue, clock: new ManualClock(T0 + 60_000), logger: log });
    const out = await worker(sqsEvent(sqsRecord({ v: 1, id: job.id, type: 'echo' }, { messageId: 'early-1' })));
    expect(ran).toBe(0);
    expect(out.batchItemFailures).toEqual([{ itemIdentifier: 'early-1' }]);
    expect(queue.visibility.at(-1)?.seconds).toBe(42_000); // the longest SQS lets it hide after a receive; it bounces once more
    expect((await store.get(job.id))?.state).toBe('retrying');
  });
});

describe('hole 4: every recurring slot yields its run', () => {
  const DAY = 86_400_000;
  const RETENTION = 30 * DAY;

  /** A schedule item as the API writes it, firing every `rate` from T0 under `overlap: allow`. */
  async function newSchedule(rate: string, expression: string, overrides: Partial<Schedule> = {}): Promise<string> {
    const name = `sched-${++seq}`;
    const schedule: Schedule = {
      name,
      type: 'echo',
      rate,
      expression,
      timezone: 'UTC',
      anchorAt: T0,
      maxAttempts: 3,
      overlap: 'allow',
      state: 'enabled',
      payloadHash: payloadHash('echo', { n: 0 }),
      createdAt: new Date(T0 - 60_000).toISOString(),
      updatedAt: new Date(T0 - 60_000).toISOString(),
      version: 1,
      skipped: 0,
      missed: 0,
      nextFireAt: T0,
      ...overrides,
    };
    await schedules.create(schedule, { payload: { n: 0 }, payloadHash: schedule.payloadHash });
    return name;
  }

  /** The job store, whose next `times` creates fail after SDK retries. */
  function failingCreates(times: number): JobStore {
    let left = times;
    const flaky: JobStore = Object.create(store) as JobStore;
    flaky.create = async (job) => {
      if (left-- > 0) throw new DependencyError('DynamoDB PutItem failed after retries');
      return store.create(job);
    };
    return flaky;
  }

  it('creates the run of a slot whose first creation failed, after a later slot was handled', async () => {
    const name = await newSchedule('1 minute', 'rate(1 minute)');
    const deps = { schedules, jobs: failingCreates(1), log, retentionMs: RETENTION };
    await expect(processFire(deps, { name, type: 'echo', fireTime: T0 }, T0 + 1_000)).rejects.toThrow();
    const second = await processFire(deps, { name, type: 'echo', fireTime: T0 + 60_000 }, T0 + 61_000);
    expect(second.kind).toBe('run');
    const redelivered = await processFire(deps, { name, type: 'echo', fireTime: T0 }, T0 + 62_000);
    expect(redelivered).toMatchObject({ kind: 'run', message: { id: runId(name, T0) } });
    expect(await store.get(runId(name, T0))).toBeDefined();
    expect(await store.get(runId(name, T0 + 60_000))).toBeDefined();
  });

  it('still creates a daily slot’s failed run a day later, and makes the schedule due soon meanwhile', async () => {
    const name = await newSchedule('1 day', 'rate(1 day)');
    const deps = { schedules, jobs: failingCreates(1), log, retentionMs: RETENTION };
    await expect(processFire(deps, { name, type: 'echo', fireTime: T0 }, T0 + 1_000)).rejects.toThrow();
    // The supervisor looks within a minute, instead of at the next fire a day later.
    expect((await schedules.get(name))?.dueAt).toBeLessThanOrEqual(T0 + 1_000 + 60_000);
    // Even if nothing looked, the next day's fire writes the reserved run first.
    const next = await processFire(deps, { name, type: 'echo', fireTime: T0 + DAY }, T0 + DAY + 1_000);
    expect(next.also.map((m) => m.id)).toEqual([runId(name, T0)]);
    expect(await store.get(runId(name, T0))).toBeDefined();
  });

  it('does not run again a slot whose run was finished and deleted by TTL, when a late copy of its fire arrives', async () => {
    const slot = T0 - 7 * DAY;
    const name = await newSchedule('7 days', 'rate(7 days)', {
      anchorAt: slot,
      nextFireAt: slot + 7 * DAY,
      lastFireAt: slot,
      lastRunId: runId(`sched-${seq + 1}`, slot),
      lastRunReservedAt: slot,
    });
    expect(await store.get(runId(name, slot))).toBeUndefined(); // written, finished, deleted by TTL
    const deps = { schedules, jobs: store, log, retentionMs: 1 * DAY };
    const late = await processFire(deps, { name, type: 'echo', fireTime: slot }, T0);
    expect(late.kind).toBe('ignored');
    expect(await store.get(runId(name, slot))).toBeUndefined();
  });

  it('does not re-create a run TTL deleted after the retention was raised (the bound stored at reservation holds)', async () => {
    const slot = T0 - 31 * DAY;
    const name = await newSchedule('1 day', 'rate(1 day)', {
      anchorAt: slot,
      nextFireAt: T0 - 30 * DAY, // the schedule was paused, then resumed: its next slot is long past
      lastFireAt: slot,
      lastRunId: runId(`sched-${seq + 1}`, slot),
      lastRunReservedAt: slot,
      lastRunConfirmUntil: slot + 7 * DAY, // reserved under a 7-day retention
    });
    const deps = { schedules, jobs: store, log, retentionMs: 35 * DAY }; // raised since
    const next = await processFire(deps, { name, type: 'echo', fireTime: T0 }, T0 + 1_000);
    expect(next.also.map((m) => m.id)).not.toContain(runId(name, slot));
    expect(await store.get(runId(name, slot))).toBeUndefined();
  });

  it('handles every overtaken slot, however many, instead of counting them as missed', async () => {
    const name = await newSchedule('1 minute', 'rate(1 minute)');
    const deps = { schedules, jobs: store, log, retentionMs: RETENTION };
    const fire = { name, type: 'echo', fireTime: T0 + 100 * 60_000 }; // delivered before the 100 slots before it
    const now = T0 + 100 * 60_000 + 1_000;
    const runs: string[] = [];
    let result = await processFire(deps, fire, now);
    for (let i = 0; result.kind === 'pending' && i < 5; i++) {
      runs.push(...result.also.map((m) => m.id));
      result = await processFire(deps, fire, now); // the fire is delivered again
    }
    runs.push(...result.also.map((m) => m.id));
    expect(result).toMatchObject({ kind: 'run', message: { id: runId(name, T0 + 100 * 60_000) } });
    expect(runs).toEqual(Array.from({ length: 100 }, (_, i) => runId(name, T0 + i * 60_000)));
    expect((await schedules.get(name))?.missed).toBe(0);
  });
});

describe('hole 5: an id is free once its job is gone for GET', () => {
  it('enqueues a new job under the id of a finished job past its retention', async () => {
    const clock = new ManualClock(T0);
    const id = `reuse-${++seq}`;
    const old = newJob({ id, state: 'succeeded', attempts: 1, expiresAt: Math.floor(T0 / 1000) - 10 });
    await store.create(old);
    const jobs = new JobsService({
      config,
      catalog: [echo],
      store,
      queue: new FakeJobQueue(),
      scheduler: new FakeJobScheduler(),
      clock,
      log,
    });
    await expect(jobs.get(id)).rejects.toMatchObject({ status: 404 });
    const again = await jobs.enqueue({ id, type: 'echo', payload: { n: 99 } });
    expect(again).toMatchObject({ created: true, job: { id, state: 'queued', attempts: 0, payload: { n: 99 } } });
    expect((await store.get(id))?.payload).toEqual({ n: 99 });
  });

  it('still returns a finished job inside its retention for a replay of the same id', async () => {
    const id = `keep-${++seq}`;
    const old = newJob({ id, state: 'succeeded', attempts: 1, expiresAt: Math.floor(T0 / 1000) + 3600 });
    await store.create(old);
    const again = await store.create({ ...old, createdAt: new Date(T0).toISOString() });
    expect(again.created).toBe(false);
  });
});

describe('hole 6: a stale failure write is never reported as applied', () => {
  it('rejects the original worker’s fail write after another worker recorded the failure', async () => {
    const job = newJob({ maxAttempts: 1 });
    await store.create(job);
    const mine = await claimed(job, 'worker-a:1', T0, 1_000);
    // The lease runs out; another worker finds the last attempt exhausted and records `failed`.
    const later = T0 + 1_000 + MAX_CLOCK_SKEW_MS + 1;
    const refused = await store.claim({ id: job.id, type: 'echo', owner: 'worker-b:1', now: later, leaseMs: 1_000 });
    expect(refused.kind).toBe('exhausted');
    if (refused.kind !== 'exhausted') return;
    await store.fail({ job: refused.job, now: later, errors: [], expiresAt: 0, writer: 'worker-b:1' });
    // The original worker's own fail write must not look "already applied" to it.
    await expect(
      store.fail({ job: mine, now: later + 10, errors: [], expiresAt: 0, writer: 'worker-a:1' }),
    ).rejects.toBeInstanceOf(LeaseLostError);
  });
});

describe('hole 7: takeover tolerates clock skew up to MAX_CLOCK_SKEW_MS', () => {
  it('does not take over a lease that expired less than the skew bound ago on the claimer’s clock', async () => {
    const job = newJob();
    await store.create(job);
    const held = await claimed(job, 'holder', T0, 3_000);
    const expiry = held.leaseExpiresAt ?? 0;
    const soon = await store.claim({ id: job.id, type: 'echo', owner: 'c1', now: expiry + 1, leaseMs: 3_000 });
    expect(soon.kind).toBe('busy');
    const edge = await store.claim({
      id: job.id,
      type: 'echo',
      owner: 'c2',
      now: expiry + MAX_CLOCK_SKEW_MS,
      leaseMs: 3_000,
    });
    expect(edge.kind).toBe('busy');
    expect((await claimed(job, 'c3', expiry + MAX_CLOCK_SKEW_MS + 1, 3_000)).attempts).toBe(2);
  });
});
