/**
 * Turns one fire of a recurring schedule into its job run: reads the schedule, decides with the
 * planner (slot, overlap policy), records the decision with one write conditioned on the
 * schedule's version, and creates the run with the normal conditional put. Used by the worker
 * (fires EventBridge Scheduler sends) and by the supervisor (fires Scheduler missed); both get
 * the same run for the same slot, so the two can never create two runs of one fire.
 */
import { type Job, type JobMessage, jobMessage } from '../core/job';
import type { JobStore } from '../core/ports';
import type { Logger } from '../logger';
import { CATCH_UP_RETRY_MS, type Schedule } from './model';
import {
  applyFire,
  catchUpSlot,
  locateFire,
  MAX_CATCH_UP_AGE_MS,
  overlapDecision,
  type PreviousRun,
  previousRun,
} from './planner';
import type { ScheduleStore } from './ports';

export interface FireProcessorDeps {
  schedules: ScheduleStore;
  jobs: JobStore;
  log: Logger;
  /**
   * How long a finished job is kept (`retentionDays`): a reserved run found missing sooner than
   * this after its reservation was never written (TTL cannot have deleted it yet), so it is
   * written now; later, it was written, finished and deleted, and must not run again.
   */
  retentionMs: number;
}

/** What became of a fire. */
export type FireResult =
  /** Run this job (a run created now or earlier); `message` is its job message. */
  (
    | { kind: 'run'; message: JobMessage; created: boolean }
    /** The overlap policy skipped the fire; it is counted on the schedule. */
    | { kind: 'skipped'; slot: number }
    /** Nothing to do: paused or deleted schedule, a repeat of a skipped fire, past its end. */
    | { kind: 'ignored'; reason: string }
    /** Earlier slots were handled first, not yet this fire's own: deliver it again to go on. */
    | { kind: 'pending'; slot: number }
  ) & {
    /**
     * Messages of runs created on the way for EARLIER slots: a reserved run whose creation had
     * failed, or slots this fire overtook (Scheduler delivered a later fire first). The caller sends
     * them too; a duplicate message is harmless.
     */
    also: JobMessage[];
  };

/** Writes of the schedule item lost to a concurrent write are retried this often. */
const MAX_CONFLICTS = 8;
/** Earlier slots one fire handles before its own; then it is delivered again (`pending`) to go on. */
const MAX_EARLIER_SLOTS = 60;

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Handles the fire of schedule `name` (job type `type`) scheduled at `fireTime` (epoch ms).
 * Idempotent: every delivery of the same fire ends with the same run, or the same skip.
 *
 * Every slot yields one run or one recorded skip: a fire that arrives after later slots were
 * missed handles those first (up to {@link MAX_EARLIER_SLOTS}, none older than
 * {@link MAX_CATCH_UP_AGE_MS}, which are counted as missed), and before a new slot is recorded,
 * the run the previous slot reserved is created if its creation had failed.
 *
 * @throws when the schedule keeps changing under it, or on AWS errors (callers retry the fire).
 */
export async function processFire(
  deps: FireProcessorDeps,
  fire: { name: string; type: string; fireTime: number },
  now: number,
): Promise<FireResult> {
  const also: JobMessage[] = [];
  let earlierSlots = 0;
  for (let conflicts = 0; conflicts < MAX_CONFLICTS; ) {
    const schedule = await deps.schedules.get(fire.name);
    if (!schedule) return { kind: 'ignored', reason: 'no such schedule (deleted)', also };
    if (schedule.type !== fire.type) {
      return { kind: 'ignored', reason: `the schedule now runs type ${schedule.type}, not ${fire.type}`, also };
    }
    const located = locateFire(schedule, fire.fireTime);
    if (located.kind === 'inactive') return { kind: 'ignored', reason: located.reason, also };
    if (located.kind === 'stale') return { ...(await repeat(deps, schedule, located.runId, now)), also };

    // Handle an overtaken earlier slot first, so that no slot is lost to the order of delivery.
    let target: { slot: number; missed: number } = located;
    const earliest = catchUpSlot(schedule, fire.fireTime, now, MAX_CATCH_UP_AGE_MS);
    if (located.missed > 0 && earliest !== undefined && earliest < located.slot) {
      const earlier = locateFire(schedule, earliest);
      if (earlier.kind === 'due') target = earlier;
    }
    const own = target.slot === located.slot;
    if (!own && earlierSlots >= MAX_EARLIER_SLOTS) return { kind: 'pending', slot: located.slot, also };

    const lastRun = await reservedRun(deps, schedule, now, also);
    const previous = await previousOf(deps, schedule, lastRun, now);
    const decision = overlapDecision(schedule.overlap, previous);
    const outcome = applyFire(schedule, target, decision, now);
    if (outcome.run) outcome.schedule.lastRunConfirmUntil = now + deps.retentionMs;
    if (!(await deps.schedules.save(outcome.schedule, schedule.version))) {
      conflicts += 1;
      await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20 * conflicts));
      continue; // another fire or an API call wrote first: decide again from what it wrote
    }
    if (target.missed > 0) {
      deps.log.warn('schedule fires were missed', { schedule: schedule.name, missed: target.missed });
    }
    const created = outcome.run ? await createOrFlag(deps, outcome.schedule, outcome.run, now) : undefined;
    if (!own) {
      earlierSlots += 1;
      if (created?.kind === 'run') also.push(created.message);
      continue; // now the fire's own slot
    }
    if (!created) return { kind: 'skipped', slot: target.slot, also };
    return { ...created, also };
  }
  throw new Error(`schedule ${fire.name} changed ${MAX_CONFLICTS} times while its fire was handled; retry the fire`);
}

/**
 * The run the schedule's latest run-creating fire reserved (`lastRunId`), created now if that
 * fire stopped before writing it (its message is added to `also`). Undefined when there is none,
 * or when the reservation is so old that a missing run was finished and deleted long ago.
 */
async function reservedRun(
  deps: FireProcessorDeps,
  schedule: Schedule,
  now: number,
  also: JobMessage[],
): Promise<Job | undefined> {
  if (schedule.lastRunId === undefined) return undefined;
  const existing = await deps.jobs.get(schedule.lastRunId);
  if (existing) return existing;
  if (schedule.lastFireAt === undefined || !recentlyReserved(deps, schedule, now)) return undefined;
  const after = schedule.lastRunAfter;
  const run = { id: schedule.lastRunId, scheduledAt: schedule.lastFireAt, ...(after ? { after } : {}) };
  const created = await createRun(deps, schedule, run, now);
  if (created.kind !== 'run') return undefined;
  also.push(created.message);
  deps.log.warn('created the run of an earlier fire whose creation had failed', { jobId: run.id });
  return deps.jobs.get(run.id);
}

/** True while a reserved run that is missing can only be one that was never written (see `retentionMs`). */
function recentlyReserved(deps: FireProcessorDeps, schedule: Schedule, now: number): boolean {
  const byNow = (schedule.lastRunReservedAt ?? 0) + deps.retentionMs;
  return now < Math.min(schedule.lastRunConfirmUntil ?? byNow, byNow);
}

/**
 * Creates the run a saved fire reserved. When that fails, the schedule is made due for the
 * supervisor within a minute (best effort), so the reservation is confirmed soon even if this
 * fire is never delivered again; then the error goes to the caller, which retries the fire.
 */
async function createOrFlag(
  deps: FireProcessorDeps,
  saved: Schedule,
  run: { id: string; scheduledAt: number; after?: string },
  now: number,
): Promise<SlotResult> {
  try {
    return await createRun(deps, saved, run, now);
  } catch (error) {
    const soon: Schedule = { ...saved, version: saved.version + 1, dueAt: now + CATCH_UP_RETRY_MS };
    await deps.schedules.save(soon, saved.version).catch(() => false);
    throw error;
  }
}

/**
 * Writes the run the schedule reserved last if its creation had failed: the supervisor calls
 * this for a schedule that is due with no slot to fire. Returns the messages to send.
 */
export async function confirmReservedRun(deps: FireProcessorDeps, name: string, now: number): Promise<JobMessage[]> {
  const schedule = await deps.schedules.get(name);
  if (!schedule) return [];
  const also: JobMessage[] = [];
  await reservedRun(deps, schedule, now, also);
  return also;
}

/** The schedule's latest run, as the overlap policy sees it (no further reads for `allow`). */
async function previousOf(
  deps: FireProcessorDeps,
  schedule: Schedule,
  lastRun: Job | undefined,
  now: number,
): Promise<PreviousRun> {
  if (schedule.overlap === 'allow' || schedule.lastRunId === undefined) return 'none';
  const predecessor =
    schedule.overlap === 'queue-one' && lastRun?.after !== undefined ? await deps.jobs.get(lastRun.after) : undefined;
  return previousRun(schedule, lastRun, predecessor, now);
}

/** A {@link FireResult} before the earlier slots' messages are attached. */
type SlotResult = DistributiveOmit<FireResult, 'also'>;
type DistributiveOmit<T, K extends keyof T> = T extends unknown ? Omit<T, K> : never;

/** A repeat of a slot handled already: hand on its run if it has one, else drop the fire. */
async function repeat(deps: FireProcessorDeps, schedule: Schedule, id: string, now: number): Promise<SlotResult> {
  const existing = await deps.jobs.get(id);
  if (existing) {
    if (existing.schedule !== schedule.name) return collision(deps, schedule, existing);
    return { kind: 'run', message: jobMessage(existing), created: false };
  }
  if (id === schedule.lastRunId && schedule.lastFireAt !== undefined && recentlyReserved(deps, schedule, now)) {
    // Reserved by a fire that stopped before writing the run: write it now. (Older than the
    // retention, a missing run was written, finished and deleted: it must not run again.)
    const after = schedule.lastRunAfter;
    return createRun(deps, schedule, { id, scheduledAt: schedule.lastFireAt, ...(after ? { after } : {}) }, now);
  }
  return { kind: 'ignored', reason: 'a repeat of a fire that was skipped or is older than the schedule' };
}

async function createRun(
  deps: FireProcessorDeps,
  schedule: Schedule,
  run: { id: string; scheduledAt: number; after?: string },
  now: number,
): Promise<SlotResult> {
  const stored = await deps.schedules.getPayload(schedule.name);
  if (!stored) throw new Error(`schedule ${schedule.name} has no payload item`);
  const job: Job = {
    id: run.id,
    type: schedule.type,
    state: 'queued',
    payload: stored.payload,
    payloadHash: stored.payloadHash,
    attempts: 0,
    maxAttempts: schedule.maxAttempts,
    createdAt: iso(now),
    updatedAt: iso(now),
    runAt: iso(run.scheduledAt),
    leaseToken: 0,
    errors: [],
    schedule: schedule.name,
    ...(schedule.priority !== undefined ? { priority: schedule.priority } : {}),
    ...(run.after !== undefined ? { after: run.after } : {}),
  };
  const written = await deps.jobs.create(job);
  if (written.created) return { kind: 'run', message: jobMessage(job), created: true };
  if (written.existing.schedule !== schedule.name) return collision(deps, schedule, written.existing);
  return { kind: 'run', message: jobMessage(written.existing), created: false };
}

function collision(deps: FireProcessorDeps, schedule: Schedule, job: Job): SlotResult {
  deps.log.error('a job that is not a run of this schedule holds the run id; the fire is dropped', {
    schedule: schedule.name,
    jobId: job.id,
  });
  return { kind: 'ignored', reason: `job ${job.id} exists and is not a run of schedule ${schedule.name}` };
}
