/**
 * Supervisor-only scheduling on moto server, where EventBridge Scheduler stores schedules but
 * never fires them (as on LocalStack): a far-future job, a retry delayed beyond SQS's 12 h and
 * recurring schedules under each overlap policy run because the supervisor brings them in, and
 * within the bounds docs/local-development.md states ("LocalStack and a real account"). No schedule is left
 * behind.
 *
 * Cadence: the deployed one, the EventBridge rule's "every minute", on the platform clock. A
 * `ShiftedClock` shared by the API, the workers and the supervisor stands for time; the test
 * plays the rule: each tick moves the clock to second 59 of the next minute and runs one pass.
 * Items here fall due on whole minutes, so the tick one second before misses them and the next
 * one, 59 s later, repairs them: the worst case of a one-minute cadence. Between ticks the clock
 * runs in real time (the pass, the SQS delivery and the worker's claim take real seconds, which
 * the measured lateness includes); it never jumps while a job runs (a jump would outrun leases).
 */
import { ListSchedulesCommand } from '@aws-sdk/client-scheduler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { echo } from '../../functions/jobs/echo';
import { flaky } from '../../functions/jobs/flaky';
import { sleep } from '../../functions/jobs/sleep';
import { DUE_GRACE_MS, minuteStart } from '../../shared/core/due';
import { runId } from '../../shared/core/fire-message';
import { retryScheduleName } from '../../shared/core/ports';
import { createLogger } from '../../shared/logger';
import type { SupervisorReport } from '../../shared/supervisor/run';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { type QueueRunner, startQueueRunner } from '../local-aws/lambda-runner';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';
import { ShiftedClock } from '../support/scheduling-clock';

/** The deployed cadence: an EventBridge rule runs the supervisor every minute. */
const RULE_INTERVAL_MS = 60_000;
/** When, within each minute, the simulated rule runs a pass (one second before the minute: the worst case). */
const RULE_PHASE_MS = 59_000;
/**
 * Room for what real time adds after the tick: the pass itself, SQS delivery and the worker's
 * claim on moto (measured 1–3 s; moto's writes are slow). Not part of the documented bound.
 */
const PICKUP_ALLOWANCE_MS = 20_000;
/** The documented supervisor-only bounds (docs/local-development.md): each grace plus one rule interval. */
const BOUND_MS = {
  /** A far-future job: starts at most 2 min after its runAt. */
  scheduled: DUE_GRACE_MS.scheduled + RULE_INTERVAL_MS,
  /** A retry whose delay exceeded 12 h: starts at most 11 min after its runAt. */
  retry: DUE_GRACE_MS.queued + RULE_INTERVAL_MS,
  /** A recurring slot: its run is created at most 3 min after the slot. */
  recurring: DUE_GRACE_MS.fire + RULE_INTERVAL_MS,
};

const clock = new ShiftedClock();
let aws: LocalAws;
let platform: LocalPlatform;
let runners: QueueRunner[] = [];

interface JobView {
  id: string;
  state: string;
  attempts: number;
  runAt: string;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

async function api<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const response = await fetch(`${platform.url}${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : undefined) as T };
}

async function getJob(id: string): Promise<JobView> {
  const { status, body } = await api<JobView>('GET', `/jobs/${encodeURIComponent(id)}`);
  expect(status, `GET /jobs/${id}`).toBe(200);
  return body;
}

/** Polls (real time, clock untouched) until the job is in one of `states`. */
async function waitForJob(id: string, states: string[], timeoutMs = 60_000): Promise<JobView> {
  const deadline = Date.now() + timeoutMs;
  let last: JobView | undefined;
  while (Date.now() < deadline) {
    last = await getJob(id);
    if (states.includes(last.state)) return last;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`job ${id} did not reach ${states.join('|')} in ${timeoutMs} ms; last: ${JSON.stringify(last)}`);
}

/** Every schedule in the platform's group (one-time job schedules and recurring triggers). */
async function scheduleNames(): Promise<string[]> {
  const names: string[] = [];
  let token: string | undefined;
  do {
    const out = await platform.clients.scheduler.send(
      new ListSchedulesCommand({ GroupName: platform.config.scheduleGroup, NextToken: token }),
    );
    names.push(...(out.Schedules ?? []).map((s) => s.Name ?? ''));
    token = out.NextToken;
  } while (token);
  return names;
}

/** The queue runners (Lambda's event source mappings); the test stops them to hold runs back. */
function startWorkers(): void {
  runners = Object.entries(platform.deployment.queues).map(([type, queues]) => {
    const handler = platform.workers[type];
    if (!handler) throw new Error(`no worker for ${type}`);
    return startQueueRunner({
      queueUrl: queues.url,
      queueArn: queues.arn,
      handler,
      functionName: `${platform.config.tableName}-${type}`,
      timeoutMs: 90_000,
      batchSize: 10,
      maxConcurrency: 4,
      waitTimeSeconds: 1,
    });
  });
}

async function stopWorkers(): Promise<void> {
  await Promise.all(runners.map((runner) => runner.stop()));
  runners = [];
}

interface Tick {
  at: number;
  report: SupervisorReport;
}

/** The EventBridge rule: moves the shared clock to the next second 59 of a minute and runs one pass. */
async function tick(): Promise<Tick> {
  const now = clock.now();
  let at = minuteStart(now) + RULE_PHASE_MS;
  if (at <= now) at += RULE_INTERVAL_MS;
  clock.jumpTo(at);
  return { at, report: await platform.supervise() };
}

/** Ticks until `done(report)`; fails after `max` ticks. Returns every tick (the last one is the one that did it). */
async function tickUntil(done: (report: SupervisorReport) => boolean, max = 6): Promise<Tick[]> {
  const ticks: Tick[] = [];
  while (ticks.length < max) {
    const t = await tick();
    ticks.push(t);
    if (done(t.report)) return ticks;
  }
  throw new Error(`not done after ${max} ticks: ${JSON.stringify(ticks.map((t) => t.report))}`);
}

/**
 * Jumps the clock to `to`, as if the rule had run every minute until then: passes run until the
 * supervisor's checkpoint is current (it reads at most 240 minutes per pass). Nothing is due on
 * the way, so these passes must repair nothing.
 */
async function fastForward(to: number): Promise<void> {
  clock.jumpTo(to);
  for (let pass = 0; pass < 20; pass++) {
    const report = await platform.supervise();
    expect(report.resent, 'nothing is due before the scenario says so').toEqual([]);
    expect(report.fired).toEqual([]);
    if (report.minutes < 240) return;
  }
  throw new Error('the supervisor did not catch up with the clock');
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

beforeAll(async () => {
  aws = await startLocalAws({ target: 'moto' });
  platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('moto-sup'),
    jobs: [echo, flaky, sleep],
    clock,
    logger: createLogger({ level: 'silent' }),
    runWorkers: false, // started (and held) by the test
    supervisor: {}, // passes only on the test's ticks
  });
  startWorkers();
  console.info(
    `[moto] write latency p50 ${aws.writeLatency?.p50} ms, p99 ${aws.writeLatency?.p99} ms ` +
      `(max ${aws.writeLatency?.max} ms, ${aws.writeLatency?.samples} writes); lease ${aws.leaseMs} ms`,
  );
});

afterAll(async () => {
  await stopWorkers();
  await platform?.stop();
  await aws?.stop();
});

describe('supervisor only (moto: Scheduler never fires), deployed one-minute cadence', () => {
  it('a job more than 15 min ahead starts within 2 min of its runAt, and its one-time schedule is removed', async () => {
    // A whole minute 19–20 min ahead: due (runAt + 1 min) on a whole minute, the rule's worst case.
    const runAt = minuteStart(clock.now()) + 20 * 60_000;
    const created = await api<JobView>('POST', '/jobs', {
      type: 'echo',
      payload: { far: true },
      runAt: new Date(runAt).toISOString(),
    });
    expect(created.status).toBe(201);
    expect(created.body.state).toBe('scheduled');
    const { id } = created.body;
    expect(await scheduleNames()).toContain(id);

    await fastForward(runAt - 60_000);
    const ticks = await tickUntil((report) => report.resent.includes(id));
    const resentAt = ticks.at(-1)?.at ?? 0;
    // Re-sent by the first tick at or after runAt + 1 min, not later.
    expect(resentAt).toBeGreaterThanOrEqual(runAt + DUE_GRACE_MS.scheduled);
    expect(resentAt - (runAt + DUE_GRACE_MS.scheduled)).toBeLessThan(RULE_INTERVAL_MS);

    const done = await waitForJob(id, ['succeeded', 'failed']);
    expect(done.state).toBe('succeeded');
    const late = Date.parse(done.startedAt ?? '') - runAt;
    console.info(
      `[moto] far-future job: started ${seconds(late)} after runAt (re-sent at +${seconds(resentAt - runAt)})`,
    );
    expect(late).toBeGreaterThanOrEqual(0);
    expect(late).toBeLessThanOrEqual(BOUND_MS.scheduled + PICKUP_ALLOWANCE_MS);
    // Gap 2 of issue 15: the schedule that never fired must not be left behind.
    expect(await scheduleNames()).not.toContain(id);
  });

  it('a retry delayed beyond 12 h starts within 11 min of its runAt, and its retry schedule is removed', async () => {
    const delayMs = 13 * 3600_000;
    // Fail it just after a whole minute, so its retry falls due there too: the rule's worst phase.
    clock.jumpTo(minuteStart(clock.now()) + 60_000);
    const created = await api<JobView>('POST', '/jobs', {
      type: 'flaky',
      payload: { failTimes: 1 },
      backoff: { kind: 'constant', delayMs },
    });
    expect(created.status).toBe(201);
    const { id } = created.body;
    const retrying = await waitForJob(id, ['retrying', 'failed', 'succeeded']);
    expect(retrying).toMatchObject({ state: 'retrying', attempts: 1 });
    const runAt = Date.parse(retrying.runAt);
    expect(runAt - Date.parse(retrying.finishedAt ?? retrying.startedAt ?? '')).toBeGreaterThan(12 * 3600_000);
    const retrySchedule = retryScheduleName(id, 1);
    expect(await scheduleNames()).toContain(retrySchedule);

    await fastForward(runAt + DUE_GRACE_MS.queued - 2 * 60_000);
    const ticks = await tickUntil((report) => report.resent.includes(id));
    const resentAt = ticks.at(-1)?.at ?? 0;
    expect(resentAt).toBeGreaterThanOrEqual(runAt + DUE_GRACE_MS.queued);
    expect(resentAt - (runAt + DUE_GRACE_MS.queued)).toBeLessThan(RULE_INTERVAL_MS);

    const done = await waitForJob(id, ['succeeded', 'failed']);
    expect(done).toMatchObject({ state: 'succeeded', attempts: 2 });
    const late = Date.parse(done.startedAt ?? '') - runAt;
    console.info(`[moto] retry after 13 h: attempt 2 started ${seconds(late)} after its runAt`);
    expect(late).toBeGreaterThanOrEqual(0);
    expect(late).toBeLessThanOrEqual(BOUND_MS.retry + PICKUP_ALLOWANCE_MS);
    expect(await scheduleNames()).not.toContain(retrySchedule);
  });

  it('recurring schedules under allow, skip and queue-one: each slot fired within 3 min, overlap applied', async () => {
    const suffix = Math.random().toString(36).slice(2, 8);
    const names = { allow: `ov-allow-${suffix}`, skip: `ov-skip-${suffix}`, 'queue-one': `ov-queue-${suffix}` };
    // Hold the workers: each run stays active across the following ticks, as a run longer than
    // the rule's interval would, so the next slots meet the overlap policy.
    await stopWorkers();
    // Start of a minute: the three creates below fall in the same one.
    clock.jumpTo(minuteStart(clock.now()) + 60_000 + 1_000);
    const firstSlots = new Set<string | null>();
    for (const [overlap, name] of Object.entries(names)) {
      const body = { name, type: 'echo', payload: { overlap }, rate: '1 minute', overlap };
      const created = await api<{ nextFireAt: string | null }>('POST', '/schedules', body);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      firstSlots.add(created.body.nextFireAt);
    }
    // A rate without startAt starts at the next whole minute, the same one for all three.
    expect(firstSlots.size, 'the three schedules start on the same minute').toBe(1);
    const firstSlot = Date.parse([...firstSlots][0] ?? '');
    expect(firstSlot % 60_000).toBe(0);
    const slots = [firstSlot, firstSlot + 60_000, firstSlot + 120_000];
    const runIdOf = runId;

    // Ticks until the first slot fires; then one tick per slot.
    const first = await tickUntil((report) => report.fired.length > 0);
    const fires = [first.at(-1) as Tick, await tick(), await tick()];
    for (const [k, slot] of slots.entries()) {
      const at = fires[k]?.at ?? 0;
      expect(at - slot, `slot ${k + 1} fired on the first tick after its grace`).toBeGreaterThanOrEqual(
        DUE_GRACE_MS.fire,
      );
      expect(at - slot - DUE_GRACE_MS.fire).toBeLessThan(RULE_INTERVAL_MS);
    }
    const fired = fires.flatMap((t) => t.report.fired);
    const expected = [
      ...slots.map((slot) => runIdOf(names.allow, slot)),
      runIdOf(names.skip, slots[0] ?? 0),
      runIdOf(names['queue-one'], slots[0] ?? 0),
      runIdOf(names['queue-one'], slots[1] ?? 0),
    ];
    expect([...fired].sort()).toEqual([...expected].sort());
    expect(fires.reduce((n, t) => n + t.report.skipped, 0)).toBe(3); // skip: slots 2, 3; queue-one: slot 3

    const views = Object.fromEntries(
      await Promise.all(
        Object.values(names).map(async (name) => {
          const { body } = await api<{ skipped: { count: number } }>('GET', `/schedules/${name}`);
          return [name, body] as const;
        }),
      ),
    );
    expect(views[names.allow]?.skipped.count).toBe(0);
    expect(views[names.skip]?.skipped.count).toBe(2);
    expect(views[names['queue-one']]?.skipped.count).toBe(1);
    for (const name of Object.values(names)) {
      expect((await api('DELETE', `/schedules/${name}`)).status).toBe(204);
    }

    // Release the workers: every run that was created runs, the waiting queue-one run after the first.
    startWorkers();
    const runs = new Map<string, JobView>();
    for (const id of expected) runs.set(id, await waitForJob(id, ['succeeded', 'failed'], 90_000));
    for (const run of runs.values()) expect(run.state).toBe('succeeded');
    const queued = [
      runs.get(runIdOf(names['queue-one'], slots[0] ?? 0)),
      runs.get(runIdOf(names['queue-one'], slots[1] ?? 0)),
    ];
    expect(Date.parse(queued[1]?.startedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(queued[0]?.finishedAt ?? ''));

    const lateness = slots.map((slot) => Date.parse(runs.get(runIdOf(names.allow, slot))?.createdAt ?? '') - slot);
    console.info(`[moto] recurring slots (allow): runs created ${lateness.map(seconds).join(', ')} after their slots`);
    for (const late of lateness) {
      expect(late).toBeGreaterThanOrEqual(DUE_GRACE_MS.fire);
      expect(late).toBeLessThanOrEqual(BOUND_MS.recurring + PICKUP_ALLOWANCE_MS);
    }
  });

  it('leaves no schedule behind in the group', async () => {
    expect(await scheduleNames()).toEqual([]);
  });
});
