import type { Clock } from '../core/clock';
import type { Job, JobProgress } from '../core/job';
import type { JobStore } from '../core/ports';
import { LeaseLostError } from '../errors';
import { errorFields, type Logger } from '../logger';

/** Progress writes are at most this frequent per attempt; later reports are coalesced. */
export const PROGRESS_MIN_INTERVAL_MS = 2_000;
export const PROGRESS_DETAIL_LIMIT = 200;

/** Progress reporting for one attempt; see {@link progressReporter}. */
export interface ProgressReporter {
  /** `ctx.progress`: validates and records (or coalesces) one report. */
  report(percent: number, detail?: string): void;
  /**
   * Stops reporting (a coalesced report not yet written is dropped) and resolves once a write
   * still in flight settled, or after `waitMs` at most: the write that ends the attempt must not
   * overtake it, or the progress write would be refused and taken for a lost lease. A refusal
   * that lands after that is the attempt's end overtaking it, not a lost lease, and is ignored.
   */
  stop(waitMs: number): Promise<void>;
}

/**
 * Throttled progress reporting for one attempt: the first report is written at once, later
 * ones at most every {@link PROGRESS_MIN_INTERVAL_MS}, keeping only the newest pending value.
 *
 * @example
 * const progress = progressReporter({ job, store, clock, log, onLeaseLost: abort });
 * try { await run({ progress: progress.report }); } finally { await progress.stop(keeper.intervalMs); }
 */
export function progressReporter(input: {
  job: Job;
  store: JobStore;
  clock: Clock;
  log: Logger;
  onLeaseLost: (error: LeaseLostError) => void;
}): ProgressReporter {
  const { job, store, clock, log } = input;
  let lastWrite = Number.NEGATIVE_INFINITY;
  let pending: JobProgress | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  /** The attempt's end may be written: whatever the store answers now is not about our lease. */
  let closed = false;
  const inFlight = new Set<Promise<void>>();

  const write = () => {
    timer = undefined;
    if (!pending || stopped) return;
    const progress = pending;
    pending = undefined;
    lastWrite = clock.now();
    const sent = store
      .progress({ job, progress })
      .catch((error: unknown) => {
        if (closed) log.debug('a progress write failed after the attempt ended; ignored', errorFields(error));
        else if (error instanceof LeaseLostError) input.onLeaseLost(error);
        else log.warn('could not record progress', errorFields(error));
      })
      .finally(() => inFlight.delete(sent));
    inFlight.add(sent);
  };

  return {
    report(percent, detail) {
      if (!Number.isFinite(percent) || percent < 0 || percent > 100) {
        throw new RangeError(`progress must be a number from 0 to 100 (got ${percent})`);
      }
      pending = { percent, at: new Date(clock.now()).toISOString() };
      if (detail !== undefined) pending.detail = String(detail).slice(0, PROGRESS_DETAIL_LIMIT);
      if (timer || stopped) return;
      const wait = lastWrite + PROGRESS_MIN_INTERVAL_MS - clock.now();
      if (wait <= 0) write();
      else timer = setTimeout(write, wait);
    },
    async stop(waitMs) {
      stopped = true;
      if (timer) clearTimeout(timer);
      if (inFlight.size > 0) {
        let bound: NodeJS.Timeout | undefined;
        const waited = new Promise((resolve) => {
          bound = setTimeout(resolve, waitMs);
        });
        await Promise.race([Promise.all(inFlight), waited]);
        clearTimeout(bound);
      }
      closed = true;
    },
  };
}

export { FINAL_WRITE_BACKOFF_MS, persist } from '../dispatch/persist';
