import type { Job } from '../../core/job';
import { leaseHeld } from '../../core/lease';
import { EARLY_START_TOLERANCE_MS } from '../../core/scheduling';
import { isTerminal } from '../../core/states';

/**
 * True when a claim at `now` would start an attempt of the job, as far as gates are concerned:
 * it is due (and no earlier attempt may still run), or its running attempt's lease expired and
 * may be taken over. A gate takes what the attempt needs (a turn, slots) only then.
 */
export function startsNow(job: Job, now: number): boolean {
  const takeover = job.state === 'running' && job.leaseExpiresAt !== undefined && !leaseHeld(job, now);
  const due =
    job.pendingParents === undefined &&
    job.state !== 'running' &&
    !isTerminal(job.state) &&
    Date.parse(job.runAt) - now <= EARLY_START_TOLERANCE_MS &&
    !leaseHeld(job, now);
  return due || takeover;
}
