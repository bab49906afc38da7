/**
 * When the supervisor should look at a job that is not finished, and the sparse, sharded GSI
 * keys that let it find such items without scanning the table. See docs/data-model.md,
 * "Finding lost work".
 *
 * Two ways lead the supervisor to a job, and neither writes anything on the hot path:
 * - **the creation sweep**: every job is looked at once, {@link SWEEP_AGE_MS} after its
 *   creation, through the `byType` entry its create wrote anyway (read by creation minute). Most
 *   jobs are finished by then, and the look costs half a read unit;
 * - **the due index**: a job on a rare path carries `dueBucket` (`due#<yyyymmddhhmm>#<shard>`,
 *   the UTC minute of `dueAt` plus a write shard) and `dueAt` (epoch ms): a far-future job from
 *   its create, and a job the supervisor found unfinished (a long run, a long backoff, a lost
 *   message) from then on. A finished job keeps its entry: removing it would cost two index
 *   writes, and the supervisor reads it once and finds the job finished.
 * If a job is still in the same state when it is looked at, something was lost (a schedule
 * that never fired, a send that never arrived, a worker that died with its message) and the
 * supervisor repairs it.
 *
 * A signal's inbox item carries a due entry too, written with it ({@link SIGNAL_LOOK_MS} on):
 * the supervisor then looks whether the job that waits for it was woken, in case the wake after
 * the inbox write was lost.
 */
import type { Job } from './job';
import { fnv1a, SHARD_COUNT } from './table';

/** How long after the expected moment each kind of item is considered lost. */
export const DUE_GRACE_MS = {
  /** A far-future job: its schedule fires a minute before runAt; a minute after, it should have started. */
  scheduled: 60_000,
  /** A queued job or a retry: SQS should deliver it within seconds of runAt. */
  queued: 10 * 60_000,
  /** A running attempt: after its lease (or its Lambda's timeout) ran out. */
  running: 60_000,
  /** A recurring schedule's fire: Scheduler fires within about a minute. */
  fire: 2 * 60_000,
} as const;

/**
 * How long after a signal's inbox write the supervisor looks whether its job resumed: the
 * signal's own due entry, written with the inbox item. A job still waiting for the signal then
 * lost its wake (the sender died after the inbox write, or its wake write failed); one woken for
 * it but not started lost its message, as a queued job that is {@link DUE_GRACE_MS}.queued late.
 */
export const SIGNAL_LOOK_MS = DUE_GRACE_MS.queued;

/**
 * How long after the end of a job's creation minute the creation sweep may read it (the sweep
 * also waits `SWEEP_LAG_MS`, one minute, for the index and API clocks): a job is looked at 9 to
 * 10 minutes after its creation, by when an immediate job whose message was lost is overdue
 * ({@link DUE_GRACE_MS}.queued, 10 minutes), as the due index would have found it.
 */
export const SWEEP_AGE_MS = DUE_GRACE_MS.queued - 2 * 60_000;

/** Lambda runs an attempt at most this much longer than the job type's timeout. */
export const ATTEMPT_MARGIN_MS = 30_000;

/** The UTC minute of `ms` as `yyyymmddhhmm`. */
export function bucketMinute(ms: number): string {
  const iso = new Date(ms).toISOString(); // 2026-01-01T10:30:00.000Z
  return `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}`;
}

/** The partition key of the due index for an item keyed `key` that is due at `dueAt`. */
export function dueBucket(dueAt: number, key: string): string {
  return dueBucketOf(bucketMinute(dueAt), fnv1a(key) % SHARD_COUNT);
}

/** The partition key value for one minute and shard. */
export function dueBucketOf(minute: string, shard: number): string {
  return `due#${minute}#${shard}`;
}

/** Start (epoch ms) of the minute `ms` falls in. */
export function minuteStart(ms: number): number {
  return Math.floor(ms / 60_000) * 60_000;
}

/**
 * When a job in `state` counts as lost if nothing changed, or undefined for a finished job. A
 * queued job is dated from the later of its runAt and its last write (`updatedAt`), so a run
 * created late (a schedule catching up) is not overdue the moment it is written.
 */
export function jobDueAt(
  job: Pick<Job, 'state' | 'runAt' | 'leaseExpiresAt' | 'pendingParents'> & { updatedAt?: string },
  options: { attemptTimeoutMs?: number; claimedAt?: number } = {},
): number | undefined {
  // a job waiting for its parents is due when their release says so, not at a time
  if (job.state === 'waiting' && job.pendingParents !== undefined) return undefined;
  switch (job.state) {
    case 'scheduled':
      return Date.parse(job.runAt) + DUE_GRACE_MS.scheduled;
    case 'queued':
    case 'retrying':
    case 'waiting': {
      const written = job.updatedAt === undefined ? 0 : Date.parse(job.updatedAt);
      return Math.max(Date.parse(job.runAt), written) + DUE_GRACE_MS.queued;
    }
    case 'running': {
      const lease = job.leaseExpiresAt ?? 0;
      const lambda =
        options.attemptTimeoutMs !== undefined && options.claimedAt !== undefined
          ? options.claimedAt + options.attemptTimeoutMs + ATTEMPT_MARGIN_MS
          : 0;
      return Math.max(lease, lambda) + DUE_GRACE_MS.running;
    }
    default:
      return undefined;
  }
}

/** The due attributes of a job (both undefined for a finished job), keyed by its id. */
export function jobDueAttributes(
  job: Pick<Job, 'id' | 'state' | 'runAt' | 'leaseExpiresAt' | 'pendingParents'> & { updatedAt?: string },
  options?: { attemptTimeoutMs?: number; claimedAt?: number },
): { dueBucket?: string; dueAt?: number } {
  const dueAt = jobDueAt(job, options);
  return dueAt === undefined ? {} : { dueAt, dueBucket: dueBucket(dueAt, job.id) };
}

/**
 * The due attributes a job is created with: none when it is due before the creation sweep looks
 * at it (it has most likely finished by then, and the sweep reads it for half a read unit), else
 * its due entry (one index write now, rather than two when the sweep would move it in later).
 */
export function createDueAttributes(
  job: Pick<Job, 'id' | 'state' | 'runAt' | 'createdAt' | 'leaseExpiresAt' | 'pendingParents'> & { updatedAt?: string },
): { dueBucket?: string; dueAt?: number } {
  if (Date.parse(job.runAt) <= Date.parse(job.createdAt) + SWEEP_AGE_MS) return {};
  return jobDueAttributes(job);
}
