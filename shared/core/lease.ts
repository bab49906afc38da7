import { MAX_VISIBILITY_DELAY_MS } from './backoff';
import type { Job } from './job';
import type { RefusedClaim } from './ports';
import { earlyByMs, isPastDispatchBy } from './scheduling';
import { isSettled } from './states';

/**
 * Default lease length. A worker that stops heartbeating loses its claim this long after its
 * last heartbeat; a redelivered message can then take the job over.
 */
export const DEFAULT_LEASE_MS = 30_000;

/** Shortest lease a worker accepts: below it the lease runs out before its first heartbeat can renew it. */
export const MIN_LEASE_MS = 300;

/**
 * The largest difference between two workers' clocks the lease design tolerates. A claimer takes
 * over an expired lease only when it expired more than this long ago by the claimer's own clock;
 * the holder stops its handler one heartbeat interval before expiry by its own clock. So two
 * clocks may differ by up to this much, as long as a handler stops within one heartbeat interval
 * of its abort signal. Lambda's clocks are NTP-synchronised (Amazon Time Sync) far below this.
 */
export const MAX_CLOCK_SKEW_MS = 2_000;

/** Heartbeats run at a third of the lease, so two may be lost before the lease expires. */
export function heartbeatIntervalMs(leaseMs: number): number {
  return Math.max(100, Math.floor(leaseMs / 3));
}

/**
 * Message visibility (seconds) set at each heartbeat: two leases plus the skew margin, so a
 * message whose worker died comes back only once its lease may be taken over.
 */
export function heartbeatVisibilitySeconds(leaseMs: number): number {
  return Math.min(MAX_VISIBILITY_DELAY_MS / 1000, Math.ceil((2 * leaseMs + MAX_CLOCK_SKEW_MS) / 1000));
}

/**
 * The latest time (epoch ms, on the claimer's clock) at which the job's last lease may still be
 * held: its expiry plus {@link MAX_CLOCK_SKEW_MS}. A claim succeeds only after it. Undefined when
 * the job carries no lease.
 */
export function leaseFenceUntil(job: Pick<Job, 'leaseExpiresAt'>): number | undefined {
  return job.leaseExpiresAt === undefined ? undefined : job.leaseExpiresAt + MAX_CLOCK_SKEW_MS;
}

/** True while the job's last lease may still be held by a worker whose clock is within the skew bound. */
export function leaseHeld(job: Pick<Job, 'leaseExpiresAt'>, now: number): boolean {
  const fence = leaseFenceUntil(job);
  return fence !== undefined && fence >= now;
}

/**
 * Why a claim of a `type` job was refused, from the item as it was (ALL_OLD).
 * Duplicates of a running or finished job must never run the handler again; a message of
 * another type (a stale message for an id since reused by another type) is not for this job.
 */
export function classifyRefusedClaim(job: Job, now: number, type: string): RefusedClaim {
  if (job.type !== type) return { kind: 'missing' };
  // held: only an operator starts it again (its retry or rerun sends a message of its own)
  if (isSettled(job.state)) return { kind: 'finished', job };
  if (isPastDispatchBy(job, now)) return { kind: 'past-deadline', job };
  if (job.state === 'waiting' && job.pendingParents !== undefined) return { kind: 'blocked', job };
  const held = leaseHeld(job, now);
  if (job.state === 'running') {
    if (held) return { kind: 'busy', job };
    if (job.attempts >= job.maxAttempts) return { kind: 'exhausted', job };
  } else {
    if (held) return { kind: 'fenced', job };
    if (earlyByMs(job, now) > 0) return { kind: 'early', job };
  }
  // Claimable after all (a write in between), or a waiting job with no attempt left (no writer
  // leaves one so): the message is dropped; the supervisor finds a job still waiting.
  return { kind: 'missing' };
}

/**
 * Milliseconds until a refused claim of the job may succeed: the later of its runAt (see
 * `earlyByMs`) and the end of its last lease's fence (a running attempt's, or a cancelled one's).
 * 0 when it may start now.
 */
export function claimableInMs(job: Job, now: number): number {
  const fence = leaseFenceUntil(job);
  const fenced = fence === undefined ? 0 : Math.max(0, fence + 1 - now);
  return Math.max(earlyByMs(job, now), fenced);
}

/**
 * True when a refused attempt-ending write (`succeed`/`retry`/`fail`) was in fact our own write,
 * applied on an earlier try whose response was lost: the job is in the target state under the
 * same fencing token, written by the same writer. Token and state alone are not enough: after a
 * lease expired on the last attempt, another worker records `failed` under the same token.
 */
export function isOwnAppliedEnd(
  current: Pick<Job, 'state' | 'leaseToken' | 'lastWriter'>,
  token: number,
  end: { state: Job['state']; writer: string },
): boolean {
  return current.state === end.state && current.leaseToken === token && current.lastWriter === end.writer;
}

/**
 * True when a job no longer waiting for `signal` was woken by it: still `waiting`, due by `now`,
 * its wait a wait for that signal. A wake that finds this (a replay whose first response was lost,
 * or a second sender) counts as woken, so its message is sent again: a spare copy is harmless,
 * a missing one would leave the job due with no message.
 */
export function wokenFor(job: Job, signal: string, now: number): boolean {
  return (
    job.state === 'waiting' &&
    job.waitSignal === undefined &&
    job.waitingFor?.kind === 'signal' &&
    job.waitingFor.key === signal &&
    Date.parse(job.runAt) <= now
  );
}
