import { JOB_STATES, type JobState } from './states';

/**
 * Operator actions on a job (`POST /jobs/{id}/cancel`, `POST /jobs/{id}/retry`). They are not
 * worker transitions, so `TRANSITIONS` does not list the restart of a finished job; the
 * control adapter's conditions enforce exactly these sets.
 */

/** A job not finished yet may be cancelled; a running attempt then loses its lease. */
export const CANCELLABLE_STATES: readonly JobState[] = ['scheduled', 'queued', 'running', 'retrying'];

/** A job that ended without success may be retried as a new series of attempts. */
export const RETRYABLE_STATES: readonly JobState[] = JOB_STATES.filter((state) =>
  (['failed', 'cancelled', 'expired'] as readonly string[]).includes(state),
);
