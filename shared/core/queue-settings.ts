/**
 * Ready-queue and DLQ settings, defined once for the CDK construct and the local harness.
 *
 * Each job type gets its own ready queue and DLQ, so a slow or failing type cannot starve
 * the others (see docs/architecture.md).
 */

/** Lambda's guidance: queue visibility ≥ 6 × function timeout. */
export const VISIBILITY_FACTOR = 6;

/**
 * Receives before SQS moves a message to the DLQ. Retries reuse the message (its visibility
 * carries the backoff), so this must exceed the largest `maxAttempts` plus room for
 * duplicate deliveries and lease takeovers.
 */
export const MAX_RECEIVE_COUNT = 30;

/** SQS retention for ready queues and DLQs: the maximum, 14 days. */
export const RETENTION_SECONDS = 14 * 24 * 3600;

/** Seconds of bookkeeping a worker Lambda needs beyond the job's own timeout. */
export const LAMBDA_MARGIN_SECONDS = 30;

/** Lambda timeout (seconds) for a job type whose attempts may run `timeoutMs`. */
export function lambdaTimeoutSeconds(timeoutMs: number): number {
  return Math.min(900, Math.ceil(timeoutMs / 1000) + LAMBDA_MARGIN_SECONDS);
}

/** Ready-queue visibility timeout (seconds) for a worker Lambda with this timeout. */
export function visibilityTimeoutSeconds(lambdaTimeout: number): number {
  return Math.min(43_200, lambdaTimeout * VISIBILITY_FACTOR);
}

/** Physical queue names for a job type inside a deployment (`prefix`). */
export function queueNames(prefix: string, type: string): { ready: string; dlq: string } {
  return { ready: `${prefix}-${type}`, dlq: `${prefix}-${type}-dlq` };
}
