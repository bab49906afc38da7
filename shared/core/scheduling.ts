/**
 * Timing rules for delayed jobs: when their one-time schedule fires, when a worker may start
 * them, and the optional dispatch deadline (`dispatchBy`). Pure domain code.
 *
 * EventBridge Scheduler fires with about one minute of precision, so a far-future job's
 * schedule fires {@link SCHEDULE_LEAD_MS} before `runAt`. A worker that receives the message
 * while `runAt` is still more than {@link EARLY_START_TOLERANCE_MS} ahead does not start the
 * job: it hides the message for the remaining seconds (one bounce), so the job starts at
 * `runAt` plus SQS's one-second granularity instead of up to a minute early or late.
 */
import { ValidationError } from '../errors';
import type { Job } from './job';

/** A delayed job's schedule fires this long before its `runAt`. */
export const SCHEDULE_LEAD_MS = 60_000;

/** A `scheduled` job whose `runAt` is more than this far ahead is not started yet. */
export const EARLY_START_TOLERANCE_MS = 1_000;

/** When the one-time schedule of a job due at `runAt` fires (epoch ms). */
export function scheduleFireAt(runAt: number): number {
  return runAt - SCHEDULE_LEAD_MS;
}

/**
 * Milliseconds until a job that waits to start (`scheduled`, `queued`, `retrying`) is due, or 0
 * when it may start now (within {@link EARLY_START_TOLERANCE_MS}). Every waiting state counts: a
 * message can arrive before its job is due (a duplicate, a capped SQS delay, a schedule left
 * behind), and it must never start the job early.
 */
export function earlyByMs(job: Pick<Job, 'state' | 'runAt'>, now: number): number {
  if (!['scheduled', 'queued', 'retrying', 'waiting'].includes(job.state)) return 0;
  const early = Date.parse(job.runAt) - now;
  return early > EARLY_START_TOLERANCE_MS ? early : 0;
}

/** Longest dispatch window after `runAt` a caller may ask for: the scheduling horizon (366 days). */
export const MAX_DISPATCH_WINDOW_MS = 366 * 24 * 3600_000;

/**
 * Checks a requested `dispatchBy` against the job's `runAt` and returns it normalised
 * (`toISOString`, so stored deadlines compare as text). Throws a {@link ValidationError} naming
 * `dispatchBy` when it is not after `runAt` or more than 366 days after it.
 */
export function checkDispatchBy(dispatchBy: string, runAt: number, now: number): string {
  const deadline = Date.parse(dispatchBy);
  if (Number.isNaN(deadline)) {
    throw new ValidationError('dispatchBy is not a date-time', [
      { path: 'dispatchBy', message: 'must be an ISO 8601 date-time with a time zone' },
    ]);
  }
  if (deadline <= Math.max(runAt, now)) {
    throw new ValidationError('dispatchBy is not after the time the job is due', [
      {
        path: 'dispatchBy',
        message: `must be later than the job's runAt (${new Date(runAt).toISOString()}) and now`,
      },
    ]);
  }
  if (deadline > runAt + MAX_DISPATCH_WINDOW_MS) {
    throw new ValidationError('dispatchBy is too far after runAt', [
      { path: 'dispatchBy', message: 'must be at most 366 days after runAt' },
    ]);
  }
  return new Date(deadline).toISOString();
}

/**
 * True when a job that never started has passed its dispatch deadline: it must end `expired`
 * instead of running. A job that started once is past dispatch, as the claim rule says
 * (core/claim-rule.ts): one with an attempt (attempts > 0), or one that waited (`resumes`: its
 * attempt was given back); its retries and resumes run.
 */
export function isPastDispatchBy(
  job: Pick<Job, 'state' | 'attempts' | 'dispatchBy' | 'resumes'>,
  now: number,
): boolean {
  if (job.dispatchBy === undefined || job.attempts > 0 || job.resumes !== undefined) return false;
  if (job.state !== 'scheduled' && job.state !== 'queued') return false;
  return Date.parse(job.dispatchBy) < now;
}
