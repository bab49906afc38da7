/**
 * What one fire of a recurring schedule does, as pure functions of the stored schedule, the
 * fire's scheduled time and the state of the schedule's previous run. The fire processor
 * (`fire-processor.ts`) reads those, applies the plan with one conditional write and creates
 * the run; these functions decide.
 *
 * Fires are matched to **slots**, the schedule's own fire times (`nextFireOf`). The run of a
 * slot has the id `runId(name, slot)`, so EventBridge Scheduler's fire, its retries, a
 * duplicate SQS delivery and the supervisor's catch-up of the same slot all name the same run,
 * and its conditional create lets only one exist.
 */
import { runId } from '../core/fire-message';
import type { Job } from '../core/job';
import { isSettled } from '../core/states';
import { nextFireOf, type OverlapPolicy, type Schedule, withDue } from './model';

/** Fires older than this are not caught up (counted as missed), like Scheduler's maximum event age. */
export const MAX_CATCH_UP_AGE_MS = 24 * 3600_000;
/** A run reserved on the schedule but not (yet) found counts as active this long (a crash in between). */
export const RESERVATION_TIMEOUT_MS = 12 * 3600_000;
/** At most this many slots are walked when one fire skips over missed ones. */
const MAX_SLOT_WALK = 10_000;

/** Where a fire falls relative to the schedule's slots. */
export type FireSlot =
  /** Paused, deleted, past its end, or the schedule changed type: the fire is dropped. */
  | { kind: 'inactive'; reason: string }
  /** Before the next slot: a repeat of a slot handled already. `runId` names that slot's run. */
  | { kind: 'stale'; runId: string }
  /** The next slot (or a later one; `missed` slots in between never fired). */
  | { kind: 'due'; slot: number; missed: number };

/**
 * Matches a fire at `fireTime` (epoch ms) to a slot. A fire at or after `nextFireAt` belongs to
 * the last slot not after it; slots skipped over are counted as `missed`. A fire a little off
 * the slot grid (Scheduler's own rounding) still matches its slot.
 */
export function locateFire(schedule: Schedule, fireTime: number): FireSlot {
  if (schedule.state !== 'enabled') return { kind: 'inactive', reason: 'the schedule is paused' };
  const next = schedule.nextFireAt;
  if (fireTime < (next ?? Number.POSITIVE_INFINITY)) {
    // A slot handled already: the latest one if the fire is not older than it, else its own time.
    const slot = schedule.lastFireAt !== undefined && fireTime >= schedule.lastFireAt ? schedule.lastFireAt : fireTime;
    if (next === undefined && schedule.lastFireAt === undefined) {
      return { kind: 'inactive', reason: 'the schedule has no fire left (past endAt)' };
    }
    return { kind: 'stale', runId: runId(schedule.name, slot) };
  }
  let slot = next as number;
  let missed = 0;
  for (let i = 0; i < MAX_SLOT_WALK; i++) {
    const following = nextFireOf(schedule, slot);
    if (following === undefined || following > fireTime) return { kind: 'due', slot, missed };
    slot = following;
    missed += 1;
  }
  return { kind: 'due', slot: fireTime, missed };
}

/** The schedule's previous run as the overlap policy sees it. */
export type PreviousRun =
  /** No previous run, or it finished. */
  | 'none'
  /** Queued, running or retrying (or reserved a moment ago and not written yet). */
  | 'active'
  /** Waiting behind an active run (a `queue-one` pending run). */
  | 'pending';

// a held run (waiting for an operator) is not active: it holds no lease and starts on its own no more
const isActive = (job: Pick<Job, 'state'> | undefined) => job !== undefined && !isSettled(job.state);

/**
 * Classifies the schedule's latest run. `lastRun` is the job `schedule.lastRunId` names
 * (undefined when not found); `predecessor` is the job that run waits for (`lastRun.after`).
 */
export function previousRun(
  schedule: Pick<Schedule, 'lastRunId' | 'lastRunReservedAt'>,
  lastRun: Pick<Job, 'state' | 'after'> | undefined,
  predecessor: Pick<Job, 'state'> | undefined,
  now: number,
): PreviousRun {
  if (schedule.lastRunId === undefined) return 'none';
  if (lastRun === undefined) {
    // Reserved but not found: being written right now, or written, finished and deleted by TTL long ago.
    const reservedAt = schedule.lastRunReservedAt ?? 0;
    return now - reservedAt < RESERVATION_TIMEOUT_MS ? 'active' : 'none';
  }
  if (!isActive(lastRun)) return 'none';
  if (lastRun.after !== undefined && lastRun.state === 'queued' && isActive(predecessor)) return 'pending';
  return 'active';
}

/** What a due fire does under the overlap policy. */
export type OverlapDecision = 'run' | 'skip' | 'wait';

/**
 * - `allow`: always run (runs may overlap).
 * - `skip`: run only when the previous run finished; otherwise the fire is skipped and counted.
 * - `queue-one`: run when the previous run finished; when it is active, create this run and let
 *   it wait behind it (`wait`); when a run already waits, skip.
 */
export function overlapDecision(policy: OverlapPolicy, previous: PreviousRun): OverlapDecision {
  if (policy === 'allow' || previous === 'none') return 'run';
  if (policy === 'skip') return 'skip';
  return previous === 'active' ? 'wait' : 'skip';
}

/** The schedule after a due fire, and the run it creates (none when skipped). */
export interface FireOutcome {
  schedule: Schedule;
  run?: { id: string; scheduledAt: number; after?: string };
}

/** Applies a decision for the due `slot` to the schedule: the next version to write. */
export function applyFire(
  schedule: Schedule,
  due: { slot: number; missed: number },
  decision: OverlapDecision,
  now: number,
): FireOutcome {
  const next: Schedule = {
    ...schedule,
    version: schedule.version + 1,
    lastFireAt: due.slot,
    missed: schedule.missed + due.missed,
  };
  const following = nextFireOf(schedule, due.slot);
  if (following === undefined) delete next.nextFireAt;
  else next.nextFireAt = following;
  if (decision === 'skip') {
    next.skipped = schedule.skipped + 1;
    next.lastSkippedAt = due.slot;
    return { schedule: withDue(next, now) };
  }
  const id = runId(schedule.name, due.slot);
  next.lastRunId = id;
  next.lastRunReservedAt = now;
  const after = decision === 'wait' ? schedule.lastRunId : undefined;
  if (after !== undefined) next.lastRunAfter = after;
  else delete next.lastRunAfter;
  return {
    schedule: withDue(next, now),
    run: { id, scheduledAt: due.slot, ...(after !== undefined ? { after } : {}) },
  };
}

/**
 * The slot the supervisor fires for an overdue schedule: its `nextFireAt`, or, when that is
 * older than `maxAgeMs`, the first slot within it (older ones are counted as missed when the
 * fire is processed). Undefined when nothing is due by `upTo`.
 */
export function catchUpSlot(schedule: Schedule, upTo: number, now: number, maxAgeMs: number): number | undefined {
  const next = schedule.nextFireAt;
  if (schedule.state !== 'enabled' || next === undefined || next > upTo) return undefined;
  if (next >= now - maxAgeMs) return next;
  const later = nextFireOf(schedule, now - maxAgeMs - 1);
  return later !== undefined && later <= upTo ? later : undefined;
}
