/**
 * How a job reaches its worker at its runAt: the one rule every hand-off follows (an enqueue and
 * its replay, the dependency release, the supervisor's re-send, a retry by an operator, a
 * signal's wake, the worker's retries and waits). Pure: shared/dispatch/dispatch.ts runs it.
 *
 * - Without a held message, the job is sent to SQS with the remaining delay (SQS holds it at most
 *   {@link SQS_MAX_DELAY_SECONDS}); later than that, and when a schedule may be made, a one-time
 *   schedule fires a minute before runAt (`scheduleFireAt`: Scheduler's precision), and the
 *   worker hides its message until runAt.
 * - Holding the job's received message (the worker), the message itself is hidden until runAt
 *   (at most {@link MAX_VISIBILITY_DELAY_MS}); later than that, and when a schedule may be made,
 *   a one-time schedule fires at runAt and the held message is done.
 *
 * A message that comes back before runAt (a capped delay or visibility) is hidden again by the
 * worker, so a capped hand-off never starts a job early.
 */
import { MAX_VISIBILITY_DELAY_MS } from './backoff';
import { SQS_MAX_DELAY_SECONDS } from './limits';
import { scheduleFireAt } from './scheduling';

export interface HandOffInput {
  /** When the job is due (epoch ms). */
  runAt: number;
  now: number;
  /** Whether the caller may make a one-time schedule. */
  scheduler: boolean;
  /** The caller holds the job's received message, and may hide it until runAt. @default false */
  received?: boolean;
  /** The name a schedule gets: the job id for a delayed job, a retry's or a wake's name for the worker's. */
  scheduleName: string;
}

/** What a hand-off does. */
export type HandOff =
  /** A new SQS message, delayed by `delaySeconds` (none: at once). */
  | { kind: 'send'; delaySeconds?: number }
  /** The held message is hidden for `visibilitySeconds` and comes back then. */
  | { kind: 'keep'; visibilitySeconds: number }
  /** A one-time schedule `name` fires at `fireAt` and sends a message carrying `notBefore` (the runAt). */
  | { kind: 'schedule'; name: string; fireAt: number; notBefore: number };

/** How a job due at `input.runAt` is handed on at `input.now`. */
export function planHandOff(input: HandOffInput): HandOff {
  const { runAt, now, scheduler, scheduleName } = input;
  const remainingMs = Math.max(0, runAt - now);
  if (input.received) {
    if (scheduler && remainingMs > MAX_VISIBILITY_DELAY_MS) {
      return { kind: 'schedule', name: scheduleName, fireAt: runAt, notBefore: runAt };
    }
    return { kind: 'keep', visibilitySeconds: Math.min(remainingMs, MAX_VISIBILITY_DELAY_MS) / 1000 };
  }
  const remaining = Math.ceil(remainingMs / 1000);
  if (scheduler && pastSqsDelay(runAt, now)) {
    return { kind: 'schedule', name: scheduleName, fireAt: scheduleFireAt(runAt), notBefore: runAt };
  }
  return remaining > 0 ? { kind: 'send', delaySeconds: Math.min(remaining, SQS_MAX_DELAY_SECONDS) } : { kind: 'send' };
}

/**
 * Whether a job due at `runAt` is further ahead than an SQS delay reaches (more than
 * {@link SQS_MAX_DELAY_SECONDS}, in whole seconds rounded up): such a job is `scheduled`, and
 * handed on through a one-time schedule.
 */
export function pastSqsDelay(runAt: number, now: number): boolean {
  return Math.ceil(Math.max(0, runAt - now) / 1000) > SQS_MAX_DELAY_SECONDS;
}
