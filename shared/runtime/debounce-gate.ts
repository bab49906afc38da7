/**
 * The debounce check before a pending run starts. A run whose key has a newer job (a higher
 * `debounceSeq`) that is pending or has started does not start: it ends `skipped`, pointing to
 * that job. Enqueue already ends replaced runs; this catches what enqueue cannot see: a job
 * written after the newer one had looked for it (three concurrent enqueues whose writes land out
 * of order), or an older job written after the newer run started (its payload would otherwise
 * run last).
 *
 * Costs reads only, per delivery of a due debounced run: the job, the key's window item and,
 * when the window names another job, that job. The skip is one conditional write, only when it
 * happens.
 */
import { type Debouncer, debounceScope } from '../core/debounce';
import { WHOLE_TYPE_KEY } from '../core/flow';
import { isPendingDebounceRun, type Job, type SkipReason } from '../core/job';
import type { JobStore } from '../core/ports';
import { EARLY_START_TOLERANCE_MS } from '../core/scheduling';

/** The newer job of its key that `job` (a due pending run) must give way to, if any. */
export async function newerDebounceRun(
  deps: { store: JobStore; debouncer: Debouncer },
  type: string,
  job: Job,
  now: number,
): Promise<Job | undefined> {
  if (!isPendingDebounceRun(job) || job.debounceSeq === undefined) return undefined;
  if (Date.parse(job.runAt) - now > EARLY_START_TOLERANCE_MS) return undefined;
  const window = await deps.debouncer.state({ scope: debounceScope(type), key: job.debounceKey ?? WHOLE_TYPE_KEY });
  const named = window.run ?? window.lastRun;
  if (named === undefined || named === job.id) return undefined;
  const newer = await deps.store.get(named);
  if (newer?.debounceSeq === undefined || newer.debounceSeq <= job.debounceSeq) return undefined;
  // one that will not run (cancelled or skipped before it started) leaves this one the run
  // (one that waits, `resumes`, has started even with its attempt given back; one an operator
  // restarted, at attempts 0 again, has started too: its lease token counts its claims)
  return isPendingDebounceRun(newer) || newer.attempts > 0 || newer.leaseToken > 0 || newer.resumes !== undefined
    ? newer
    : undefined;
}

/** The skip of a run that gives way to `newer`: conditioned on its lower seq, like enqueue's. */
export function giveWayTo(job: Job, newer: Job, now: number, expiresAt: number) {
  const reason: SkipReason = {
    kind: 'debounce',
    key: job.debounceKey ?? WHOLE_TYPE_KEY,
    by: newer.id,
    at: new Date(now).toISOString(),
  };
  return { job, now, expiresAt, reason, ...(newer.debounceSeq === undefined ? {} : { beforeSeq: newer.debounceSeq }) };
}
