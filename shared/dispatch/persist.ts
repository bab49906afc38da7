/**
 * A write tried again on throttling and dependency failures, after the SDK's own retries: for
 * the writes whose loss would cost more than the wait (an attempt's outcome, a place handed on).
 */
import { OrreryError } from '../errors';
import { errorFields, type Logger } from '../logger';

/** Delays between tries of a write that closes an attempt (after the SDK's own retries). */
export const FINAL_WRITE_BACKOFF_MS = [100, 400, 1_600] as const;

/**
 * Runs a write that records an attempt's outcome, trying again on throttling and dependency
 * failures: losing it would mean running the handler again after the lease expires.
 */
export async function persist<T>(write: () => Promise<T>, log: Logger, what: string): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await write();
    } catch (error) {
      const delay = FINAL_WRITE_BACKOFF_MS[attempt];
      if (!(error instanceof OrreryError) || !error.retryable || delay === undefined) throw error;
      log.warn(`${what} failed; trying again`, { delayMs: delay, ...errorFields(error) });
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}
