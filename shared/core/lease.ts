import type { Job } from './job';
import type { ClaimResult } from './ports';
import { earlyByMs, isPastDispatchBy } from './scheduling';
import { isTerminal } from './states';

/**
 * Default lease length. A worker that stops heartbeating loses its claim this long after its
 * last heartbeat; a redelivered message can then take the job over.
 */
export const DEFAULT_LEASE_MS = 30_000;

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

/** Message visibility (seconds) set at each heartbeat: two leases, so it outlives the lease. */
export function heartbeatVisibilitySeconds(leaseMs: number): number {
  return Math.min(43_200, Math.ceil((2 * leaseMs) / 1000));
}

/**
 * Why a claim's conditional write was refused, from the item as it was (ALL_OLD).
 * Duplicates of a running or finished job must never run the handler again.
 */
export function classifyRefusedClaim(job: Job, now: number): ClaimResult {
  if (isTerminal(job.state)) return { kind: 'finished', job };
  if (isPastDispatchBy(job, now)) return { kind: 'past-deadline', job };
  if (earlyByMs(job, now) > 0) return { kind: 'early', job };
  const leaseLive = job.state === 'running' && (job.leaseExpiresAt ?? 0) >= now;
  if (leaseLive) return { kind: 'busy', job };
  if (job.attempts >= job.maxAttempts) return { kind: 'exhausted', job };
  // The condition also checks the type; a mismatch means the message is not for this job.
  return { kind: 'missing' };
}
