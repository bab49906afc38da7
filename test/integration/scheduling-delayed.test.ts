/**
 * Delayed jobs at any horizon, dispatch deadlines and the supervisor's repairs of jobs, against
 * local AWS through the real SDK (DynamoDB Local, fauxqs, the Scheduler stand-in), with a clock
 * the tests move forward.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { DynamoDueIndex } from '../../shared/aws/dynamo-due-index';
import { DynamoJobGraph } from '../../shared/aws/dynamo-job-graph';
import { EventBridgeJobScheduler } from '../../shared/aws/scheduler-job-scheduler';
import { SqsJobQueue } from '../../shared/aws/sqs-job-queue';
import type { Job } from '../../shared/core/job';
import { payloadHash } from '../../shared/core/payload-hash';
import { SCHEDULE_LEAD_MS } from '../../shared/core/scheduling';
import { incarnationOf } from '../../shared/core/table';
import { createLogger } from '../../shared/logger';
import { MAX_RETRY_MINUTES } from '../../shared/supervisor/plan';
import { FAILED_REPAIR_RETRY_MS, runSupervisorOnce, type SupervisorDeps } from '../../shared/supervisor/run';
import { startLocalSupervisor } from '../local-aws/supervisor-loop';
import { type SchedulingFixture, sleepReal, startSchedulingFixture } from './scheduling-fixture';

const HOUR = 3600_000;
let f: SchedulingFixture;

afterEach(async () => {
  await f?.stop();
});

const iso = (ms: number) => new Date(ms).toISOString();

describe('a delayed job two hours out', () => {
  it('gets a one-time schedule a minute before runAt, and runs once when due, not before', async () => {
    f = await startSchedulingFixture({ label: 'delay2h' });
    const runAt = Math.ceil((f.clock.now() + 2 * HOUR) / 1000) * 1000;
    const created = await f.request('POST', '/jobs', { type: 'echo', payload: { later: true }, runAt: iso(runAt) });
    expect(created.status).toBe(201);
    expect(created.body.state).toBe('scheduled');
    const id: string = created.body.id;
    const schedule = f.schedules().find((s) => s.Name === id);
    expect(schedule?.ScheduleExpression).toBe(`at(${iso(runAt - SCHEDULE_LEAD_MS).slice(0, 19)})`);

    // Not yet due: nothing fires.
    f.clock.jumpTo(runAt - SCHEDULE_LEAD_MS - 5_000);
    await f.fire();
    await sleepReal(1_500);
    expect((await f.job(id))?.state).toBe('scheduled');

    // Three seconds before runAt the schedule has fired (its at() time passed); the worker holds the job back.
    f.clock.jumpTo(runAt - 3_000);
    await f.fire();
    await sleepReal(1_200);
    expect(f.schedules().find((s) => s.Name === id)).toBeUndefined(); // fired and deleted itself
    expect((await f.job(id))?.state).toBe('scheduled');
    expect(f.executions).toEqual([]);

    const done = await f.waitFor(id, ['succeeded', 'failed']);
    const error = (f.executions[0]?.at ?? Number.NaN) - runAt;
    console.log(`[scheduling] 2-hour delayed job: start-time error ${error} ms (handler start - runAt)`);
    expect(done).toMatchObject({ state: 'succeeded', attempts: 1, result: { later: true } });
    expect(error).toBeGreaterThanOrEqual(0); // not before runAt
    expect(error).toBeLessThan(1_500);
    await sleepReal(1_500);
    expect(f.executions.map((e) => e.id)).toEqual([id]); // once
  });

  it('is still run by the supervisor when its schedule was deleted behind Orrery’s back', async () => {
    f = await startSchedulingFixture({ label: 'lostsched' });
    const runAt = f.clock.now() + 2 * HOUR;
    const { body } = await f.request('POST', '/jobs', { type: 'echo', payload: { n: 1 }, runAt: iso(runAt) });
    expect(f.aws.scheduler.deleteDirectly(body.id, f.platform.config.scheduleGroup)).toBe(true);

    f.clock.jumpTo(runAt + 30_000);
    expect((await f.platform.supervise()).resent).toEqual([]); // within the minute of grace Scheduler gets
    f.clock.jumpTo(runAt + 2 * 60_000);
    const report = await f.platform.supervise();
    expect(report.resent).toEqual([body.id]);
    const done = await f.waitFor(body.id, ['succeeded']);
    expect(done.attempts).toBe(1);
    // A second supervisor pass (or a concurrent one) does not send it again.
    expect((await f.platform.supervise()).resent).toEqual([]);
    await sleepReal(1_000);
    expect(f.executions.map((e) => e.id)).toEqual([body.id]);
    // Finished: its due entry stays where it was (removing it would cost two index writes); the
    // index is not read at that minute again, and a pass that reads it finds the job finished.
    const item = (await f.items()).find((i) => i.id === body.id);
    expect(item?.state).toBe('succeeded');
    expect((await f.platform.supervise()).resent).toEqual([]);
  });

  it('leaves no schedule behind where Scheduler never fires: the supervisor deletes the one it replaced', async () => {
    f = await startSchedulingFixture({ label: 'nofire', schedulerFires: false });
    const runAt = f.clock.now() + 2 * HOUR;
    const { body } = await f.request('POST', '/jobs', { type: 'echo', payload: { n: 2 }, runAt: iso(runAt) });
    expect(f.schedules().map((s) => s.Name)).toContain(body.id);

    // As on LocalStack or moto: time passes, the schedule never fires (no fire() call).
    f.clock.jumpTo(runAt + 2 * 60_000);
    const report = await f.platform.supervise();
    expect(report.resent).toEqual([body.id]);
    expect(report.schedulesDeleted).toBe(1);
    expect(f.schedules().map((s) => s.Name)).not.toContain(body.id);
    expect((await f.waitFor(body.id, ['succeeded'])).attempts).toBe(1);
  });

  it('is cancelled with its schedule deleted, and never runs', async () => {
    f = await startSchedulingFixture({ label: 'cancelfar' });
    const runAt = f.clock.now() + 30 * 24 * HOUR;
    const { body } = await f.request('POST', '/jobs', { type: 'echo', payload: { n: 2 }, runAt: iso(runAt) });
    expect(f.schedules().map((s) => s.Name)).toContain(body.id);
    const cancelled = await f.request('POST', `/jobs/${body.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.state).toBe('cancelled');
    expect(f.schedules().map((s) => s.Name)).not.toContain(body.id);
    f.clock.jumpTo(runAt + 5 * 60_000);
    await f.fire();
    const report = await f.platform.supervise();
    expect(report.resent).toEqual([]);
    await sleepReal(500);
    expect((await f.job(body.id))?.state).toBe('cancelled');
    expect(f.executions).toEqual([]);
  });
});

describe('dispatchBy', () => {
  it('ends a far-future job not started by its deadline in expired, without running it', async () => {
    f = await startSchedulingFixture({ label: 'dispatch' });
    const runAt = f.clock.now() + 20 * 60_000;
    const dispatchBy = iso(runAt + 30_000);
    const created = await f.request('POST', '/jobs', {
      type: 'echo',
      payload: { n: 3 },
      runAt: iso(runAt),
      dispatchBy,
    });
    expect(created.status).toBe(201);
    expect(created.body.dispatchBy).toBe(dispatchBy);
    // The platform was down past the deadline; the late fire must not run the job.
    f.clock.jumpTo(runAt + 5 * 60_000);
    await f.fire();
    const expired = await f.waitFor(created.body.id, ['expired', 'succeeded']);
    expect(expired).toMatchObject({ state: 'expired', attempts: 0 });
    expect(expired.finishedAt).toBeDefined();
    await sleepReal(500);
    expect(f.executions).toEqual([]);
  });

  it('expires a queued job whose message arrives after the deadline', async () => {
    f = await startSchedulingFixture({ label: 'dispatchq' });
    const now = f.clock.now();
    const created = await f.request('POST', '/jobs', {
      type: 'echo',
      payload: { n: 4 },
      delaySeconds: 2,
      dispatchBy: iso(now + 10_000),
    });
    f.clock.advance(60_000); // the deadline passes while the message is delayed in SQS
    const job = await f.waitFor(created.body.id, ['expired', 'succeeded']);
    expect(job.state).toBe('expired');
    expect(f.executions).toEqual([]);
  });

  it('rejects a deadline that is not after runAt, naming dispatchBy, and writes nothing', async () => {
    f = await startSchedulingFixture({ label: 'dispatchbad' });
    const runAt = f.clock.now() + HOUR;
    const bad = await f.request('POST', '/jobs', {
      type: 'echo',
      payload: {},
      runAt: iso(runAt),
      dispatchBy: iso(runAt - 1000),
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.issues.map((i: { path: string }) => i.path)).toEqual(['dispatchBy']);
    expect((await f.items()).filter((i) => String(i.pk).startsWith('job#'))).toEqual([]);
    expect(f.schedules()).toEqual([]);
  });
});

describe('bad times on POST /jobs', () => {
  it.each([
    ['runAt in the past', (now: number) => ({ runAt: iso(now - 60_000) })],
    ['runAt beyond the 366-day horizon', (now: number) => ({ runAt: iso(now + 367 * 24 * HOUR) })],
  ])('rejects %s with 400 on path runAt and creates nothing', async (_label, times) => {
    f = await startSchedulingFixture({ label: 'badtime' });
    const response = await f.request('POST', '/jobs', { type: 'echo', payload: {}, ...times(f.clock.now()) });
    expect(response.status).toBe(400);
    expect(response.body.error.issues.map((i: { path: string }) => i.path)).toEqual(['runAt']);
    expect((await f.items()).filter((i) => String(i.pk).startsWith('job#'))).toEqual([]);
    expect(f.schedules()).toEqual([]);
  });
});

/** The supervisor's dependencies on the fixture's platform, but its due index (which a test wraps). */
function supervisorParts(): Omit<SupervisorDeps, 'index'> {
  return {
    config: f.platform.config,
    jobs: f.platform.store,
    schedules: f.platform.schedules,
    queue: new SqsJobQueue(f.platform.clients.sqs),
    scheduler: new EventBridgeJobScheduler(
      f.platform.clients.scheduler,
      f.platform.config.scheduleGroup,
      f.platform.config.schedulerRoleArn,
    ),
    log: createLogger({ level: 'silent' }),
  };
}

/** What the API writes for an immediate job, without its message (lost, or taken by a worker that died). */
async function createQueued(
  id: string,
  now: number,
  payload: Record<string, unknown> = {},
  overrides: Partial<Job> = {},
): Promise<void> {
  await f.platform.store.create({
    id,
    type: 'echo',
    state: 'queued',
    payload,
    payloadHash: payloadHash('echo', payload),
    attempts: 0,
    maxAttempts: 3,
    createdAt: iso(now),
    updatedAt: iso(now),
    runAt: iso(now),
    leaseToken: 0,
    errors: [],
    ...overrides,
  });
}

describe('the supervisor re-drives lost work', () => {
  it('re-sends a running job whose worker died (lease expired, message gone), and it runs again', async () => {
    f = await startSchedulingFixture({ label: 'deadworker' });
    const now = f.clock.now();
    const id = `dead-${now}`;
    const payload = { n: 5 };
    // What the API writes for an immediate job; its message was taken by a worker that then died.
    await createQueued(id, now, payload);
    const claim = await f.platform.store.claim({
      id,
      type: 'echo',
      owner: 'worker-killed',
      now,
      leaseMs: 30_000,
      attemptTimeoutMs: 10_000,
    });
    expect(claim.kind).toBe('claimed');

    f.clock.advance(60_000); // the lease ran out, but the grace has not
    expect((await f.platform.supervise()).resent).toEqual([]);
    // The creation sweep looks at the job 9–10 minutes after its creation: the lease is long past.
    f.clock.advance(9 * 60_000);
    const report = await f.platform.supervise();
    expect(report.resent).toEqual([id]);
    const done = await f.waitFor(id, ['succeeded', 'failed']);
    expect(done).toMatchObject({ state: 'succeeded', attempts: 2, leaseToken: 2 });
    expect(f.executions.map((e) => e.id)).toEqual([id]);
  });

  it('re-sends a queued job whose send was lost, once per back-off, and two supervisors send it once', async () => {
    f = await startSchedulingFixture({ label: 'lostsend' });
    const now = f.clock.now();
    const id = `lost-${now}`;
    await createQueued(id, now);
    f.clock.advance(11 * 60_000);
    // A second supervisor with its own clients, racing the platform's.
    const other = startLocalSupervisor({
      config: f.platform.config,
      clients: f.platform.clients,
      jobs: f.platform.store,
      schedules: f.platform.schedules,
      clock: f.clock,
      logger: createLogger({ level: 'silent' }),
    });
    const [a, b] = await Promise.all([f.platform.supervise(), other.supervise()]);
    await other.stop();
    expect([...a.resent, ...b.resent]).toEqual([id]);
    await f.waitFor(id, ['succeeded']);
    expect(f.executions.map((e) => e.id)).toEqual([id]);
  });

  it.each([
    ['had finished', true],
    ['was still running', false],
  ])(
    'releases a waiting child whose registration was lost (the API died after writing it), when its parent %s',
    async (_label, finishedFirst) => {
      f = await startSchedulingFixture({ label: finishedFirst ? 'lostreg-done' : 'lostreg-live' });
      const now = f.clock.now();
      const graph = new DynamoJobGraph(f.platform.clients.dynamo, f.platform.config.tableName);
      const parent = `parent-${now}`;
      const child = `child-${now}`;
      if (finishedFirst) {
        expect((await f.request('POST', '/jobs', { id: parent, type: 'echo', payload: { p: 1 } })).status).toBe(201);
        await f.waitFor(parent, ['succeeded']);
      } else {
        await createQueued(parent, now, { p: 1 }); // its send lost too: the supervisor re-sends it
      }
      // What an enqueue with dependsOn writes before it registers the child with its parent: the
      // parents item and the waiting status item. The API died there, and no replay came.
      await graph.putParents({
        child,
        incarnation: incarnationOf(new Date(now).toISOString()),
        parents: [{ id: parent, policy: 'fail' }],
        expiresAt: Math.floor(now / 1000) + 86_400,
      });
      await createQueued(child, now, { c: 1 }, { state: 'waiting', pendingParents: 1 });
      // The creation sweep looks at both 9–10 minutes after their creation.
      f.clock.advance(11 * 60_000);
      await f.platform.supervise();
      await f.waitFor(parent, ['succeeded']);
      await f.waitFor(child, ['succeeded']);
      expect(f.executions.filter((e) => e.id === child)).toHaveLength(1);
      expect(f.executions.filter((e) => e.id === parent)).toHaveLength(1);
    },
  );

  it('keeps the checkpoint’s retry list as set changes, so passes that overlap merge their failures', async () => {
    f = await startSchedulingFixture({ label: 'retrylist' });
    const index = new DynamoDueIndex(f.platform.clients.dynamo, f.platform.config.tableName);
    const M = 60_000;
    expect(await index.getCheckpoint('due')).toBeUndefined();
    await index.setCheckpoint({ minute: 10 * M, done: [], failed: [2 * M, 3 * M] }, 'due');
    // an overlapping pass that saw other failures, and one that read 2 again without one
    await index.setCheckpoint({ minute: 12 * M, done: [], failed: [5 * M] }, 'due');
    await index.setCheckpoint({ minute: 11 * M, done: [2 * M], failed: [7 * M] }, 'due');
    expect(await index.getCheckpoint('due')).toEqual({ minute: 11 * M, retry: [3 * M, 5 * M, 7 * M] });
    await index.setCheckpoint({ minute: 13 * M, done: [3 * M, 5 * M, 7 * M], failed: [] }, 'due');
    expect(await index.getCheckpoint('due')).toEqual({ minute: 13 * M, retry: [] });
    expect(await index.getCheckpoint('sweep')).toBeUndefined(); // its own position
  });

  it('a checkpoint save cut short between its two writes never moves past a failed minute it did not list', async () => {
    f = await startSchedulingFixture({ label: 'retrycut' });
    const M = 60_000;
    const client = new DynamoDBClient({});
    let updates = 0;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'UpdateItemCommand' && ++updates === 2)
          throw new Error('injected: the second write fails');
        return next(args);
      },
      { step: 'initialize' },
    );
    const index = new DynamoDueIndex(client, f.platform.config.tableName);
    const plain = new DynamoDueIndex(f.platform.clients.dynamo, f.platform.config.tableName);
    await plain.setCheckpoint({ minute: 10 * M, done: [], failed: [1 * M] }, 'due');
    // a pass that read minute 1 again without a failure, and failed at minute 5
    await expect(index.setCheckpoint({ minute: 20 * M, done: [1 * M], failed: [5 * M] }, 'due')).rejects.toThrow(
      'injected',
    );
    const saved = await plain.getCheckpoint('due');
    // minute 5 is read again by the next pass: listed, or not passed
    expect(saved !== undefined && (saved.retry.includes(5 * M) || saved.minute <= 5 * M)).toBe(true);
    client.destroy();
  });

  it('repairs that keep failing hold back no later repair: a job due hours after them is still re-sent', async () => {
    f = await startSchedulingFixture({ label: 'poison' });
    const t0 = f.clock.now();
    const index = new DynamoDueIndex(f.platform.clients.dynamo, f.platform.config.tableName);
    // Queued jobs whose sends were lost, each with a due entry: one per minute for longer than the
    // checkpoint's retry list is long, whose repairs always fail (their loads throw), and one due
    // 5 h 40 min after the first.
    const poison = Array.from({ length: MAX_RETRY_MINUTES + 1 }, (_, i) => `poison${i}-${t0}`);
    const later = `later-${t0}`;
    for (const [i, id] of poison.entries()) {
      await createQueued(id, t0);
      expect(await index.moveDue(`job#${id}`, undefined, t0 + (11 + i) * 60_000)).toBe(true);
    }
    await createQueued(later, t0);
    expect(await index.moveDue(`job#${later}`, undefined, t0 + 340 * 60_000)).toBe(true);
    const loads = new Map<string, number>();
    const deps: SupervisorDeps = {
      index: Object.assign(Object.create(index) as DynamoDueIndex, {
        loadJob: async (id: string) => {
          if (poison.includes(id)) {
            loads.set(id, (loads.get(id) ?? 0) + 1);
            throw new Error('injected: this job cannot be loaded');
          }
          return index.loadJob(id);
        },
      }),
      ...supervisorParts(),
    };
    await runSupervisorOnce(deps, t0); // the checkpoint, just before t0
    // Six hours later (a long outage): more than one pass's worth of minutes to read back.
    f.clock.advance(6 * HOUR);
    const resent: string[] = [];
    for (let pass = 0; pass < 3; pass++) {
      const report = await runSupervisorOnce(deps, f.clock.now());
      resent.push(...report.resent);
      f.clock.advance(6 * 60_000);
    }
    expect(resent).toEqual([later]);
    // each failing repair is tried again, at a later pass, not dropped
    for (const id of poison) expect(loads.get(id) ?? 0).toBeGreaterThanOrEqual(2);
    await f.waitFor(later, ['succeeded']);
  });

  it('a sweep window still being read late in the pass gives its jobs due entries instead of looks', async () => {
    f = await startSchedulingFixture({ label: 'sweeplate' });
    const now = f.clock.now();
    const id = `late-${now}`;
    await createQueued(id, now);
    const index = new DynamoDueIndex(f.platform.clients.dynamo, f.platform.config.tableName);
    const deps = (slow: boolean): SupervisorDeps => ({
      // a window whose read runs past one and a half times the sweep's budget
      index: Object.assign(Object.create(index) as DynamoDueIndex, {
        unfinished: async (ids: readonly string[]) => {
          const out = await index.unfinished(ids);
          if (slow) await sleepReal(1_600);
          return out;
        },
      }),
      ...supervisorParts(),
      options: { sweepBudgetMs: 1_000 },
    });
    await runSupervisorOnce(deps(false), now); // the checkpoints
    f.clock.advance(11 * 60_000);
    const at = f.clock.now();
    const late = await runSupervisorOnce(deps(true), at);
    expect(late.swept).toBeGreaterThanOrEqual(1); // the window was read (its checkpoint moves on)
    expect(late.resent).toEqual([]); // but its job was not looked at: it got a due entry
    const dueAt = Number((await f.items()).find((i) => i.id === id)?.dueAt);
    expect(dueAt).toBe(at + FAILED_REPAIR_RETRY_MS);
    f.clock.advance(FAILED_REPAIR_RETRY_MS + 60_000);
    expect((await runSupervisorOnce(deps(false), f.clock.now())).resent).toEqual([id]);
    await f.waitFor(id, ['succeeded']);
  });

  it('a re-send that fails after the due entry was written holds no sweep: the due entry brings the job back', async () => {
    f = await startSchedulingFixture({ label: 'sendfail' });
    const now = f.clock.now();
    const id = `sendfail-${now}`;
    await createQueued(id, now);
    f.clock.advance(11 * 60_000);
    // A supervisor whose send to the type's queue fails (a queue that does not exist).
    const route = f.platform.config.routes.echo;
    if (!route) throw new Error('no echo route');
    const broken = startLocalSupervisor({
      config: { ...f.platform.config, routes: { echo: { ...route, queueUrl: `${route.queueUrl}-gone` } } },
      clients: f.platform.clients,
      jobs: f.platform.store,
      schedules: f.platform.schedules,
      clock: f.clock,
      logger: createLogger({ level: 'silent' }),
    });
    const failed = await broken.supervise();
    await broken.stop();
    expect(failed.resent).toEqual([]);
    expect(failed.failed).toBeGreaterThanOrEqual(1);
    // the sweep moved past the job's creation minute: its due entry owns the next try
    expect(failed.sweepCheckpoint).toBeGreaterThan(now);
    expect(failed.swept).toBeGreaterThanOrEqual(1); // the job's minute, swept in full
    const dueAt = Number((await f.items()).find((i) => i.id === id)?.dueAt);
    expect(dueAt).toBeGreaterThan(now + 15 * 60_000); // the re-send's back-off: 5 minutes on
    expect(dueAt).toBeLessThanOrEqual(f.clock.now() + 5 * 60_000);
    f.clock.advance(6 * 60_000);
    expect((await f.platform.supervise()).resent).toEqual([id]);
    await f.waitFor(id, ['succeeded']);
  });
});
