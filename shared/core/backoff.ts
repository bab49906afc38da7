import * as z from './zod-mini';

/**
 * Longest a received message can be hidden: SQS allows 12 h of visibility counted from the
 * receive, and refuses (does not trim) a longer one; the invocation that received it may have run
 * up to 15 min before it hides it, so 11 h 40 min. Longer retry delays go through Scheduler.
 */
export const MAX_VISIBILITY_DELAY_MS = 42_000_000;
/** Longest delay between two attempts (30 days). */
export const MAX_BACKOFF_MS = 30 * 24 * 3600_000;
/** Bounds of `maxAttempts`. */
export const MAX_ATTEMPTS_LIMIT = 25;
export const DEFAULT_MAX_ATTEMPTS = 3;

const delayMs = z.int().check(z.minimum(0), z.maximum(MAX_BACKOFF_MS));

/**
 * How long to wait before attempt n+1 after attempt n failed.
 * - `exponential`: `min(maxMs, baseMs × factor^(n-1))`, with full jitter by default
 *   (a uniform random delay between 0 and that cap, as in the AWS Architecture Blog's
 *   "Exponential Backoff And Jitter").
 * - `linear`: `min(maxMs, stepMs × n)`.
 * - `constant`: `delayMs` every time.
 */
export const backoffSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('exponential'),
    /** @default 1000 */
    baseMs: z._default(delayMs, 1000),
    /** @default 2 */
    factor: z._default(z.number().check(z.minimum(1), z.maximum(10)), 2),
    /** @default 3_600_000 (1 h) */
    maxMs: z._default(delayMs, 3_600_000),
    /** @default 'full' */
    jitter: z._default(z.enum(['full', 'none']), 'full'),
  }),
  z.strictObject({
    kind: z.literal('linear'),
    stepMs: delayMs,
    /** @default 3_600_000 (1 h) */
    maxMs: z._default(delayMs, 3_600_000),
  }),
  z.strictObject({ kind: z.literal('constant'), delayMs }),
]);

export type Backoff = z.output<typeof backoffSchema>;
export type BackoffInput = z.input<typeof backoffSchema>;

export const DEFAULT_BACKOFF: Backoff = {
  kind: 'exponential',
  baseMs: 1000,
  factor: 2,
  maxMs: 3_600_000,
  jitter: 'full',
};

export const retryPolicySchema = z.strictObject({
  /** Attempts in all, the first included. @default 3 */
  maxAttempts: z._default(z.int().check(z.minimum(1), z.maximum(MAX_ATTEMPTS_LIMIT)), DEFAULT_MAX_ATTEMPTS),
  /** @default exponential, base 1 s, factor 2, max 1 h, full jitter */
  backoff: z._default(backoffSchema, DEFAULT_BACKOFF),
});

export type RetryPolicy = z.output<typeof retryPolicySchema>;

/**
 * Delay in ms before the next attempt, after `failedAttempt` (1-based) failed.
 * `random` returns a number in [0, 1); inject it for deterministic tests.
 *
 * @example
 * retryDelayMs({ kind: 'constant', delayMs: 5000 }, 3) // 5000
 */
export function retryDelayMs(backoff: Backoff, failedAttempt: number, random: () => number = Math.random): number {
  const n = Math.max(1, Math.floor(failedAttempt));
  switch (backoff.kind) {
    case 'constant':
      return backoff.delayMs;
    case 'linear':
      return Math.min(backoff.maxMs, backoff.stepMs * n);
    case 'exponential': {
      const cap = Math.min(backoff.maxMs, backoff.baseMs * backoff.factor ** (n - 1));
      return backoff.jitter === 'full' ? Math.floor(random() * cap) : Math.floor(cap);
    }
  }
}
