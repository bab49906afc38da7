import { claimVerdict } from '../../core/claim-rule';
import type { Job } from '../../core/job';

/**
 * True when a claim of a `type` job at `now` would start an attempt (it is due, or its expired
 * lease may be taken over), by the one claim rule the stores claim by (core/claim-rule.ts). A
 * gate takes what the attempt needs (a turn, slots) only then.
 */
export function startsNow(job: Job, type: string, now: number): boolean {
  return claimVerdict(job, type, now).kind === 'claim';
}
