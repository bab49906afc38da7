/**
 * The plan of a system chaos run: every job (how it is enqueued, when it is due, how its
 * handler behaves, what is done to it) and every recurring schedule, drawn from one seed.
 */
import type { BackoffInput } from '../../shared/core/backoff';
import { fnv1a } from '../../shared/core/table';
import type { OverlapPolicy } from '../../shared/schedules/model';
import type { ProbePayload } from '../support/probes';

/** How a job's due time is given. */
export type Timing =
  /** Due now. */
  | 'now'
  /** SQS delay of a few seconds (real time). */
  | 'sqs-short'
  /** SQS delay of 5–15 minutes: hidden long in real time, due after a clock jump (the supervisor must repair). */
  | 'sqs-long'
  /** `runAt` more than 15 minutes ahead: a one-time Scheduler schedule. */
  | 'scheduler';

/**
 * The state an aimed cancel waits for; the plan holds its job there for as long as the cancel may
 * take: a handler held until the cancel is answered (`running`), a retry hours away on the driven
 * clock (`retrying`), an SQS delay of minutes (`queued`), a Scheduler `runAt` (`scheduled`).
 */
export type Aim = 'running' | 'retrying' | 'queued' | 'scheduled';

/** Backoff between attempts. */
export type BackoffKind = 'short' | 'hours' | 'days';

export type Behaviour = 'succeed' | 'sleep' | 'long' | 'flaky' | 'always-fail';

/** One planned job. */
export interface PlannedJob {
  id: string;
  type: string;
  /** How it is created: alone, in a batch call, or by an event (system-events.ts) with its siblings. */
  via: 'single' | 'batch' | 'event';
  /** The event that makes it (`via: 'event'`). */
  event?: { name: string; id: string };
  timing: Timing;
  delaySeconds?: number;
  /** Offset of `runAt` from the driven time at enqueue (Scheduler timing). */
  runAtOffsetMs?: number;
  behaviour: Behaviour;
  backoffKind: BackoffKind;
  backoff: BackoffInput;
  payload: ProbePayload;
  maxAttempts: number;
  /** Its priority (a type with priorities). @default the type's */
  priority?: number;
  /** Extra copies of its message, ms after the acknowledgement. */
  duplicates: number[];
  /**
   * Cancel this long after the acknowledgement; then maybe retry `retryAfterMs` after that.
   * With `aim`, the cancel first waits (polling, bounded) until the job is in that state, so a
   * cancel aimed at a running attempt or a pending retry lands there however slow the machine is.
   */
  control?: {
    cancelAfterMs: number;
    retryAfterMs?: number;
    aim?: Aim;
    /** Rerun (`POST /jobs/{id}/rerun`) from this step instead of a retry, `retryAfterMs` after the cancel. */
    rerunFromStep?: string;
  };
  /** Jobs with the same value are enqueued together, in one batch call (a burst on one key). */
  together?: string;
  /**
   * A follower in a planned line: enqueued (with the rest of its stage, in one batch call) only
   * once every one of `holders` runs its held first attempt on the same key, and once the
   * followers of the earlier stages have arrived (left `queued`); the holders are released once
   * every follower has. So it meets a held key whatever the machine's load.
   */
  arrival?: { holders: string[]; stage: number };
  /** A copy of its message is put into the DLQ (and redriven) this long after the acknowledgement. */
  dlqCopyAfterMs?: number;
  /** The flow (`POST /flows`) the job is created in, instead of alone or in a batch. */
  flow?: string;
  /** Its parents in that flow, each with the policy of its edge. */
  dependsOn?: { id: string; onParentFailure: 'fail' | 'ignore' | 'cancel' }[];
}

/** One planned recurring schedule. */
export interface PlannedSchedule {
  name: string;
  type: string;
  rate: string;
  overlap: OverlapPolicy;
  payload: ProbePayload;
  maxAttempts: number;
}

/** Sizes and rates of a plan. */
export interface PlanOptions {
  jobs: number;
  types: string[];
  scheduleType: string;
  schedules: number;
  /** Driven time the run covers: Scheduler jobs are due within its first half, `days` backoffs (> 12 h) last up to 80 % of it. */
  horizonMs: number;
  leaseMs: number;
  timeoutMs: number;
  batchShare: number;
  killRate: number;
  duplicateRate: number;
  controlRate: number;
  dlqCopyRate: number;
  /** Types whose jobs carry a flow-control key (`payload.tag`, one of that many keys). */
  tagged?: Readonly<Record<string, number>>;
  /** Tagged types whose jobs take their keys in runs of this many (so that each key gets bursts). @default 1 */
  tagRuns?: Readonly<Record<string, number>>;
  /** Types whose jobs are all due now (a debounced type refuses a delay). */
  undelayed?: readonly string[];
  /**
   * Types whose first `n` jobs are a burst: due now, on one key, enqueued in one batch call, with
   * no controls (so a throttle must make some wait, a rate limit must skip some). @default none
   */
  bursts?: Readonly<Record<string, number>>;
  /**
   * Lines planned on one key (an untagged type's one key, `*`): `holders` jobs of `holderType`
   * hold their first attempt until released, while one job of each type of each stage arrives on
   * their key, stage after stage (see {@link PlannedJob.arrival}). A concurrency limit of n needs
   * n holders for a wait; a singleton scope one holder for a wait (`queue`), a skip (`skip`) and a
   * cancel (`cancel-running`). @default none
   */
  lines?: readonly PlannedLine[];
  /** Prefix of the job ids. @default 'sys' */
  idPrefix?: string;
}

/** One planned line: see {@link PlanOptions.lines}. */
export interface PlannedLine {
  holderType: string;
  holders: number;
  stages: readonly (readonly string[])[];
}

const HOUR = 3600_000;

/** Cancels aimed at each of the states of {@link Aim} that a plan with controls always has. */
export const MIN_AIMED_CANCELS = 2;

/** Kills early in a first attempt of a job due now that a plan with a kill rate always has. */
export const MIN_SYSTEM_KILLS = 3;
/**
 * Jobs a plan with controls reruns from a step right after cancelling their running attempt, at
 * least: the rerun races the attempt the cancel stops.
 */
export const MIN_RERUNS = 3;

/** Latest point of a sure kill in its handler: well within a lease, however slow the heartbeats. */
const SURE_KILL_MAX_MS = 200;

/**
 * Whether a planned job is a plain one of `type` that the run may turn into something else (an
 * event's job, a unit of composition): sent alone, due now, succeeding, with no control, burst,
 * line, flow, key or hold planned on it. Each user adds its own further conditions.
 */
export function plainAndDueNow(job: PlannedJob, type: string): boolean {
  return (
    job.type === type &&
    job.via === 'single' &&
    job.timing === 'now' &&
    job.behaviour === 'succeed' &&
    !job.control &&
    job.together === undefined &&
    job.arrival === undefined &&
    job.flow === undefined &&
    job.payload.tag === undefined &&
    !job.payload.holdOnAttempts
  );
}

/**
 * Draws the jobs and schedules of a run.
 *
 * @example
 * const plan = planSystem(options, seeded(42));
 */
export function planSystem(
  options: PlanOptions,
  random: () => number,
): { jobs: PlannedJob[]; schedules: PlannedSchedule[] } {
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  /**
   * A cancel aimed at `aim`: the job is shaped so that it reaches that state and stays there for
   * as long as the cancel may take, however slow the machine (no kill ends it first).
   */
  const aimCancel = (job: PlannedJob, aim: Aim): NonNullable<PlannedJob['control']> => {
    delete job.payload.killOnAttempts;
    delete job.payload.killAfterMs;
    delete job.payload.killAfterSteps;
    delete job.delaySeconds;
    delete job.runAtOffsetMs;
    if (aim === 'queued') {
      job.timing = 'sqs-long';
      job.delaySeconds = int(300, 900);
      return { cancelAfterMs: int(0, 3000), aim };
    }
    if (aim === 'scheduled') {
      job.timing = 'scheduler';
      job.runAtOffsetMs = int(16 * 60_000, Math.max(17 * 60_000, options.horizonMs / 2));
      return { cancelAfterMs: int(0, 3000), aim };
    }
    job.timing = 'now';
    if (aim === 'running') {
      // Its first attempt holds until the cancel is answered (or its signal fires).
      job.payload.holdOnAttempts = [1];
      job.payload.holdAbortable = true;
      job.payload.sleepMs = int(0, 100);
      return { cancelAfterMs: int(0, 500), aim };
    }
    // The retry is hours away on the driven clock, which does not move while an action is pending.
    job.backoffKind = 'hours';
    job.backoff = { kind: 'constant', delayMs: int(2 * HOUR, 4 * HOUR) };
    job.payload.sleepMs = int(0, 100);
    return { cancelAfterMs: int(0, 1000), aim };
  };
  const jobs: PlannedJob[] = [];
  for (let i = 0; i < options.jobs; i++) {
    const r = random();
    const behaviour: Behaviour =
      r < 0.35 ? 'succeed' : r < 0.55 ? 'sleep' : r < 0.6 ? 'long' : r < 0.88 ? 'flaky' : 'always-fail';
    const payload: ProbePayload = {};
    let attemptsNeeded = 1;
    if (behaviour === 'succeed') payload.sleepMs = int(0, 30);
    if (behaviour === 'sleep') payload.sleepMs = int(100, 1500);
    if (behaviour === 'long') {
      payload.sleepMs = int(Math.round(options.leaseMs * 1.2), Math.min(options.timeoutMs - 1000, options.leaseMs * 2));
    }
    if (behaviour === 'flaky') {
      payload.failTimes = int(1, 2);
      payload.sleepMs = int(0, 200);
      attemptsNeeded = payload.failTimes + 1;
    }
    if (behaviour === 'always-fail') {
      payload.alwaysFail = true;
      payload.sleepMs = int(0, 100);
    }
    let kills = 0;
    if (random() < options.killRate) {
      kills = 1;
      payload.killOnAttempts = [behaviour === 'always-fail' ? 1 : int(1, attemptsNeeded)];
      payload.killAfterMs = int(0, Math.round(options.leaseMs * 0.75));
    }
    const type = options.types[i % options.types.length] ?? 'sys-a';
    const t = random();
    const timing: Timing = options.undelayed?.includes(type)
      ? 'now'
      : t < 0.6
        ? 'now'
        : t < 0.75
          ? 'sqs-short'
          : t < 0.83
            ? 'sqs-long'
            : 'scheduler';
    const b = random();
    const retries = behaviour === 'flaky' || behaviour === 'always-fail';
    const backoffKind: BackoffKind = !retries || b < 0.7 ? 'short' : b < 0.85 ? 'hours' : 'days';
    const delayMs =
      backoffKind === 'short'
        ? int(100, 1500)
        : backoffKind === 'hours'
          ? int(1 * HOUR, 6 * HOUR)
          : int(12 * HOUR + 60_000, Math.max(12 * HOUR + 120_000, Math.round(options.horizonMs * 0.8)));
    const job: PlannedJob = {
      id: `${options.idPrefix ?? 'sys'}-${i.toString().padStart(5, '0')}-${Math.floor(random() * 1e9).toString(36)}`,
      type,
      via: random() < options.batchShare ? 'batch' : 'single',
      timing,
      behaviour,
      backoffKind,
      backoff: { kind: 'constant', delayMs },
      payload,
      maxAttempts: behaviour === 'always-fail' ? int(2, 3) : attemptsNeeded + kills + 2,
      duplicates: random() < options.duplicateRate ? [int(0, 4000), ...(random() < 0.3 ? [int(4000, 9000)] : [])] : [],
    };
    // from the job's index, not a draw: the plan of a seed stays the same with or without a limit
    const keys = options.tagged?.[type];
    const run = options.tagRuns?.[type] ?? 1;
    if (keys !== undefined) payload.tag = `key-${Math.floor(Math.floor(i / options.types.length) / run) % keys}`;
    // Durable steps for half the plain jobs, from the job's id (not a draw: the rest of a seed's
    // plan is the same with or without them); a kill may come between two steps.
    const h = fnv1a(job.id);
    if (keys === undefined && h % 2 === 0) {
      payload.steps = 1 + ((h >>> 1) % 3);
      if (payload.killOnAttempts) payload.killAfterSteps = (h >>> 3) % (payload.steps + 1);
    }
    if (timing === 'sqs-short') job.delaySeconds = int(1, 20);
    if (timing === 'sqs-long') job.delaySeconds = int(300, 900);
    if (timing === 'scheduler') job.runAtOffsetMs = int(16 * 60_000, Math.max(17 * 60_000, options.horizonMs / 2));
    if (random() < options.controlRate) {
      // Aim the cancel at a running attempt, at a job waiting for its retry, or anywhere.
      const aim = random();
      const aimAt: Aim | undefined =
        aim < 0.35 && !payload.alwaysFail
          ? 'running'
          : aim < 0.7 && (behaviour === 'flaky' || behaviour === 'always-fail')
            ? 'retrying'
            : timing === 'sqs-long'
              ? 'queued'
              : timing === 'scheduler'
                ? 'scheduled'
                : undefined;
      job.control = aimAt !== undefined ? aimCancel(job, aimAt) : { cancelAfterMs: int(0, 5000) };
      if (random() < 0.7) job.control.retryAfterMs = int(0, 3000);
    }
    if (random() < options.dlqCopyRate) job.dlqCopyAfterMs = int(0, 6000);
    jobs.push(job);
  }
  const policies: OverlapPolicy[] = ['allow', 'skip', 'queue-one'];
  const schedules: PlannedSchedule[] = [];
  for (let i = 0; i < options.schedules; i++) {
    const flaky = random() < 0.3;
    schedules.push({
      name: `rec-${i}-${Math.floor(random() * 1e6).toString(36)}`,
      type: options.scheduleType,
      rate: pick(['10 minutes', '15 minutes', '30 minutes', '1 hour']),
      overlap: policies[i % policies.length] ?? 'allow',
      payload: { sleepMs: int(200, 3000), ...(flaky ? { failTimes: 1 } : {}) },
      maxAttempts: 3,
    });
  }
  // What a small run's coverage checks count is topped up where a seed drew too little of it
  // (after every other draw, so the rest of its plan stays the same), and only on jobs no burst,
  // control or kill has shaped already.
  const free = (job: PlannedJob) =>
    !job.control &&
    !job.payload.killOnAttempts &&
    job.together === undefined &&
    job.arrival === undefined &&
    !job.payload.holdOnAttempts;
  for (const [type, size] of Object.entries(options.bursts ?? {})) {
    const burst = jobs.filter((j) => j.type === type).slice(0, size);
    const tag = burst[0]?.payload.tag;
    for (const job of burst) {
      job.together = `burst-${type}`;
      job.via = 'batch';
      job.timing = 'now';
      delete job.delaySeconds;
      delete job.runAtOffsetMs;
      delete job.control;
      if (tag !== undefined) job.payload.tag = tag;
    }
  }
  for (const [n, line] of (options.lines ?? []).entries()) {
    const take = (type: string) => {
      const job = jobs.find((j) => j.type === type && free(j) && j.dependsOn === undefined);
      if (!job) return undefined;
      job.timing = 'now';
      delete job.delaySeconds;
      delete job.runAtOffsetMs;
      return job;
    };
    const holders: PlannedJob[] = [];
    for (let h = 0; h < line.holders; h++) {
      const holder = take(line.holderType);
      if (!holder) break;
      // held until its followers have arrived (or a cancel-running follower aborts it)
      holder.payload.holdOnAttempts = [1];
      holder.payload.holdAbortable = true;
      holders.push(holder);
    }
    if (holders.length < line.holders) continue;
    // one key for the line: the first holder's (none for a limit without a key function: its one key)
    const tag = holders[0]?.payload.tag;
    const onKey = (job: PlannedJob) => {
      if (tag !== undefined) job.payload.tag = tag;
    };
    for (const holder of holders) onKey(holder);
    for (const [stage, types] of line.stages.entries()) {
      for (const type of types) {
        const follower = take(type);
        if (!follower) continue;
        follower.together = `line-${n}-${stage}`;
        follower.via = 'batch';
        onKey(follower);
        follower.arrival = { holders: holders.map((h) => h.id), stage };
      }
    }
  }
  if (options.controlRate > 0) {
    for (const aim of ['running', 'retrying', 'queued', 'scheduled'] as const) {
      let aimed = jobs.filter((j) => j.control?.aim === aim).length;
      for (const job of jobs) {
        if (aimed >= MIN_AIMED_CANCELS) break;
        const fails = job.behaviour === 'flaky' || job.behaviour === 'always-fail';
        if (!free(job) || (aim === 'running' && job.payload.alwaysFail) || (aim === 'retrying' && !fails)) continue;
        // a debounced type refuses a delay
        if ((aim === 'queued' || aim === 'scheduled') && options.undelayed?.includes(job.type)) continue;
        job.control = aimCancel(job, aim);
        aimed += 1;
      }
    }
  }
  if (options.killRate > 0) {
    // Kills early in a first attempt of a job due now: that attempt starts, and nothing (a lost
    // lease, a cancel) stops its handler before the kill.
    const sure = (j: PlannedJob) =>
      j.payload.killOnAttempts?.[0] === 1 &&
      j.timing === 'now' &&
      !j.control &&
      (j.payload.killAfterMs ?? 0) <= SURE_KILL_MAX_MS;
    let planned = jobs.filter(sure).length;
    for (const job of jobs) {
      if (planned >= MIN_SYSTEM_KILLS) break;
      if (!free(job) || job.timing !== 'now' || job.behaviour === 'always-fail') continue;
      job.payload.killOnAttempts = [1];
      job.payload.killAfterMs = int(0, SURE_KILL_MAX_MS);
      if ((job.payload.steps ?? 0) > 0) job.payload.killAfterSteps = 0;
      job.maxAttempts += 1;
      planned += 1;
    }
  }
  if (options.controlRate > 0) {
    // Reruns from a step racing the attempt their cancel stops: half the jobs whose cancel is
    // aimed at a running attempt (all of them, up to MIN_RERUNS), given steps if they had none,
    // are rerun from one of their steps within half a second of the cancel, instead of retried.
    // From the job's id, not a draw: the rest of a seed's plan stays the same.
    let reruns = 0;
    for (const job of jobs) {
      if (job.control?.aim !== 'running') continue;
      const h = fnv1a(`rerun:${job.id}`);
      if (reruns >= MIN_RERUNS && h % 2 === 1) continue;
      const steps = job.payload.steps ?? 1 + ((h >>> 1) % 3);
      job.payload.steps = steps;
      job.control.retryAfterMs = (h >>> 3) % 500;
      job.control.rerunFromStep = `s${(h >>> 12) % steps}`;
      reruns += 1;
    }
  }
  return { jobs, schedules };
}

/** Jobs per planned flow: a diamond, A → (B, C) → D. */
export const DIAMOND_JOBS = 4;

/**
 * Flows of jobs of `type`, each a diamond A → (B, C) → D created whole with `POST /flows`: A and
 * B may fail (for good: `alwaysFail`, or flaky), and each of D's edges has a policy drawn from
 * `fail`, `ignore` and `cancel`, so that every policy meets parents that fail and that succeed.
 * Due now, with no control actions; durable steps from the job id as for plain jobs.
 */
export function planDiamonds(count: number, type: string, random: () => number): PlannedJob[] {
  const int = (min: number, max: number) => min + Math.floor(random() * (max - min + 1));
  const policies = ['fail', 'ignore', 'cancel'] as const;
  const jobs: PlannedJob[] = [];
  for (let f = 0; f < count; f++) {
    const flow = `dag-${f.toString().padStart(4, '0')}-${Math.floor(random() * 1e9).toString(36)}`;
    const node = (name: string, payload: ProbePayload, dependsOn?: PlannedJob['dependsOn']): PlannedJob => {
      const id = `${flow}-${name}`;
      const h = fnv1a(id);
      return {
        id,
        type,
        via: 'single',
        timing: 'now',
        behaviour: payload.alwaysFail ? 'always-fail' : payload.failTimes ? 'flaky' : 'succeed',
        backoffKind: 'short',
        backoff: { kind: 'constant', delayMs: int(100, 800) },
        payload: { ...payload, ...(h % 2 === 0 ? { steps: 1 + ((h >>> 1) % 3) } : {}) },
        maxAttempts: payload.alwaysFail ? 2 : 4,
        duplicates: [],
        flow,
        ...(dependsOn ? { dependsOn } : {}),
      };
    };
    // the first two flows have a parent that fails for good, so every plan ends children by policy
    const r = random();
    const failA = f === 0 || r < 0.2;
    const failB = f === 1 || random() < 0.3;
    const a = node('a', failA ? { alwaysFail: true, sleepMs: int(0, 50) } : { sleepMs: int(0, 200) });
    const b = node('b', failB ? { alwaysFail: true } : random() < 0.5 ? { failTimes: 1 } : { sleepMs: int(0, 300) });
    const c = node('c', { sleepMs: int(0, 300) }, [{ id: a.id, onParentFailure: policies[f % 3] ?? 'fail' }]);
    b.dependsOn = [{ id: a.id, onParentFailure: 'ignore' }];
    const d = node('d', { sleepMs: int(0, 100) }, [
      { id: b.id, onParentFailure: policies[(f + 1) % 3] ?? 'fail' },
      { id: c.id, onParentFailure: policies[Math.floor(f / 3) % 3] ?? 'fail' },
    ]);
    jobs.push(a, b, c, d);
  }
  return jobs;
}
