import type { RerunChange } from './control-ports';
import type { Job, OperatorAction } from './job';
import { JOB_STATES, type JobState } from './states';

/**
 * Operator actions on a job (`POST /jobs/{id}/cancel`, `POST /jobs/{id}/retry`). They are not
 * worker transitions, so `TRANSITIONS` does not list the restart of a finished job; the
 * control adapter's conditions enforce exactly these sets.
 */

/**
 * A job not finished yet may be cancelled; a running attempt then loses its lease. A `held` job
 * (its replay diverged from its journal) is among them: a cancel is one of the three ways an
 * operator ends its hold, and releases its dependants by their edges' policies.
 */
export const CANCELLABLE_STATES: readonly JobState[] = [
  'scheduled',
  'queued',
  'running',
  'retrying',
  'waiting',
  'held',
];

/**
 * The states in which a `cancel-running` singleton cancels the job holding its key: those a cancel
 * takes, but not `held`. A held job gave its slots back when its attempt ended; one still named
 * as a holder (its worker died before the give-back) runs nothing, and only an operator may end
 * its hold (a cancel would release its dependants by their policies): the line keeper frees its
 * place as a finished holder's.
 */
export const PREEMPTIBLE_STATES: readonly JobState[] = CANCELLABLE_STATES.filter((state) => state !== 'held');

/**
 * A job that ended without success may be retried as a new series of attempts, and so may a
 * `held` one (after a fix of its code: the new series replays its journal again).
 */
export const RETRYABLE_STATES: readonly JobState[] = JOB_STATES.filter((state) =>
  (['held', 'failed', 'cancelled', 'expired'] as readonly string[]).includes(state),
);

/**
 * A job that ended may be rerun from a step (`POST /jobs/{id}/rerun`): those a retry takes, and a
 * job that succeeded (and a `held` one, as a retry). Never one that may still run: the write is conditioned on these states, and
 * a cancelled attempt's lease stays a fence for the rerun's first claim, as for a retry.
 */
export const RERUNNABLE_STATES: readonly JobState[] = JOB_STATES.filter((state) =>
  (['held', 'failed', 'cancelled', 'expired', 'succeeded'] as readonly string[]).includes(state),
);

const iso = (ms: number) => new Date(ms).toISOString();

/** A finished job past its retention: gone for callers (TTL deletes it up to ~48 h later). */
export function pastRetention(job: Pick<Job, 'expiresAt'>, now: number): boolean {
  return job.expiresAt !== undefined && job.expiresAt * 1000 < now;
}

/**
 * The job a cancel at `now` leaves behind: `cancelled`, finished now, retained until
 * `expiresAt`, without a lease owner. The token and `leaseExpiresAt` stay: no later attempt
 * may start while the cancelled one may still run.
 */
/**
 * How many operator actions a job keeps (the newest): about 150 bytes each, so the list stays
 * a few KB of the job's item whatever is done to it (DynamoDB items hold 400 KB). The log line
 * and the `OperatorActions` metric of each action are the full record.
 */
export const MAX_CONTROLS = 20;

/** The job's operator actions with this one appended (when the write names who did it), the newest {@link MAX_CONTROLS} kept. */
export function withControl(
  job: Pick<Job, 'controls'>,
  action: OperatorAction['action'],
  input: { now: number; by?: string },
): Pick<Job, 'controls'> {
  if (input.by === undefined) return {};
  return { controls: [...(job.controls ?? []), { action, by: input.by, at: iso(input.now) }].slice(-MAX_CONTROLS) };
}

export function cancelledJob(job: Job, input: { now: number; expiresAt: number; by?: string }): Job {
  const next: Job = {
    ...job,
    ...withControl(job, 'cancel', input),
    state: 'cancelled',
    finishedAt: iso(input.now),
    updatedAt: iso(input.now),
    expiresAt: input.expiresAt,
  };
  delete next.leaseOwner;
  return next;
}

/**
 * The job a restart (operator retry) at `now` leaves behind: `queued` now, `attempts` 0,
 * `retries` + 1; no TTL, finish, start, lease owner, result, progress or dispatch deadline. The
 * token, `leaseExpiresAt` (the claim's fence), the errors and the last writer stay.
 */
export function restartedJob(
  job: Job,
  input: { now: number; by?: string; rerun?: Pick<RerunChange, 'journal' | 'payload'> },
): Job {
  const { rerun } = input;
  const next: Job = {
    ...job,
    ...withControl(job, rerun ? 'rerun' : 'retry', input),
    ...(rerun
      ? {
          journal: rerun.journal,
          reruns: (job.reruns ?? 0) + 1,
          ...(rerun.payload ? { payload: rerun.payload.value, payloadHash: rerun.payload.hash } : {}),
        }
      : {}),
    state: 'queued',
    attempts: 0,
    runAt: iso(input.now),
    updatedAt: iso(input.now),
    retries: (job.retries ?? 0) + 1,
  };
  for (const field of [
    'expiresAt',
    'finishedAt',
    'startedAt',
    'leaseOwner',
    'result',
    'progress',
    'dispatchBy',
    // a retried job runs now, whatever its parents (`dependsOn`) are doing
    'pendingParents',
    'parentsResolved',
  ] as const) {
    delete next[field];
  }
  return next;
}
