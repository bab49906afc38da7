/**
 * Keeping an attempt's lease: heartbeats every third of the lease, and an abort of the handler
 * at least one heartbeat interval before the lease runs out if it could not be renewed. Started
 * right after the claim, and measured against the claim's own clock reading, so a slow claim
 * and the wait for runAt come out of the same budget.
 */
import type { Clock } from '../core/clock';
import type { Job } from '../core/job';
import { heartbeatIntervalMs, heartbeatVisibilitySeconds } from '../core/lease';
import type { JobQueue, JobStore } from '../core/ports';
import { LeaseLostError } from '../errors';
import { errorFields, type Logger } from '../logger';

export interface LeaseKeeper {
  /** Heartbeat period (a third of the lease). */
  readonly intervalMs: number;
  /** Checks the time left now (aborting through `onLost` when too little is); true while the lease holds. */
  check(): boolean;
  /** Stops heartbeating; resolves once a heartbeat still in flight settled (at most one interval). */
  stop(): Promise<void>;
}

/**
 * Keeps the lease of `job` (as the claim returned it) until `stop()`. Calls `onLost` once, when
 * the store refuses a heartbeat (taken over, cancelled) or when the lease could not be renewed
 * in time: by then at least one heartbeat interval of the lease is left, which is the handler's
 * time to stop before anyone may take over (plus `MAX_CLOCK_SKEW_MS`, see core/lease.ts).
 *
 * @example
 * const keeper = keepLease({ job, store, queue, queueUrl, receiptHandle, clock, leaseMs, log, onLost: abort });
 * try { await run(); } finally { await keeper.stop(); }
 */
export function keepLease(input: {
  job: Job;
  store: JobStore;
  queue: JobQueue;
  queueUrl: string;
  receiptHandle: string;
  clock: Clock;
  leaseMs: number;
  log: Logger;
  onLost: (error: LeaseLostError) => void;
}): LeaseKeeper {
  const { job, store, clock, leaseMs, log } = input;
  const interval = heartbeatIntervalMs(leaseMs);
  let validUntil = job.leaseExpiresAt ?? clock.now() + leaseMs;
  let stopped = false;
  let lost = false;
  let warnedSlow = false;
  let beat: Promise<void> = Promise.resolve();

  const lose = (error: LeaseLostError) => {
    if (lost || stopped) return;
    lost = true;
    input.onLost(error);
  };
  const unconfirmed = () => new LeaseLostError(job.id, job.leaseToken);

  // Checked four times per interval on the injected clock, from the claim on: the first check
  // that finds less than 1¼ intervals left aborts, so at least one interval is left (less only
  // by event-loop lag).
  const checkEvery = Math.max(25, Math.floor(interval / 4));
  const check = (): boolean => {
    if (clock.now() + interval + checkEvery >= validUntil) lose(unconfirmed());
    return !lost;
  };
  const checker = setInterval(check, checkEvery);
  check(); // a claim whose answer came late may leave no time at all
  let beating = false;
  const ticker = setInterval(() => {
    const now = clock.now();
    // One heartbeat at a time: a late one landing after a newer one would shorten the lease.
    if (lost || beating) return;
    beating = true;
    beat = store
      .heartbeat({ job, now, leaseMs })
      .then(() => {
        if (stopped) return;
        validUntil = now + leaseMs;
        const tookMs = clock.now() - now;
        if (!warnedSlow && tookMs > interval / 3) {
          // Two such round trips in one interval and the lease cannot be confirmed in time.
          warnedSlow = true;
          log.warn('the job table answers slowly for this lease length; raise leaseMs (≥ 10 × p99 write latency)', {
            tookMs,
            leaseMs,
            heartbeatIntervalMs: interval,
          });
        }
        return input.queue.changeVisibility(input.queueUrl, input.receiptHandle, heartbeatVisibilitySeconds(leaseMs));
      })
      .catch((error: unknown) => {
        if (error instanceof LeaseLostError) lose(error);
        else log.warn('heartbeat failed; will try again', errorFields(error));
      })
      .finally(() => {
        beating = false;
      });
  }, interval);

  return {
    intervalMs: interval,
    check,
    async stop() {
      stopped = true;
      clearInterval(ticker);
      clearInterval(checker);
      // A heartbeat still in flight must not change the message after the caller decides
      // (bounded: a hung call must not hang the invocation).
      await Promise.race([beat, new Promise((resolve) => setTimeout(resolve, interval).unref())]);
    },
  };
}
