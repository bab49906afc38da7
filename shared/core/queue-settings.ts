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

/**
 * Ready-queue visibility timeout (seconds) for a worker Lambda with this timeout, fed with this
 * batching window (Lambda's guidance: 6 × the function timeout plus the window).
 */
export function visibilityTimeoutSeconds(lambdaTimeout: number, batchingWindowSeconds = 0): number {
  return Math.min(43_200, lambdaTimeout * VISIBILITY_FACTOR + batchingWindowSeconds);
}

/** Longest queue-name prefix: with `_ready_` and a 40-character type, a name stays within SQS's 80. */
export const MAX_QUEUE_PREFIX = 32;

const QUEUE_PREFIX_PATTERN = /^[A-Za-z0-9-]{1,32}$/;

/** Whether `prefix` can prefix a deployment's queue names (letters, digits, `-`; no `_`). */
export function isQueueNamePrefix(prefix: string): boolean {
  return QUEUE_PREFIX_PATTERN.test(prefix);
}

/**
 * Physical queue names of a job type inside a deployment: `<prefix>_ready_<type>` and
 * `<prefix>_dlq_<type>`. Derived, not configured, so a function finds any type's queue with no
 * list of URLs in its environment. A prefix has no `_` and a type is lower-case letters, digits
 * and `-`, so `<prefix>_ready_*` names exactly the deployment's ready queues (an IAM resource
 * pattern that matches no DLQ and no other deployment's queue), and `<prefix>_dlq_*` its DLQs.
 */
export function queueNames(prefix: string, type: string): { ready: string; dlq: string } {
  return { ready: `${prefix}_ready_${type}`, dlq: `${prefix}_dlq_${type}` };
}

/** The job type of a ready queue's name or URL under `prefix`, or undefined for any other queue. */
export function typeOfReadyQueue(prefix: string, nameOrUrl: string): string | undefined {
  const name = nameOrUrl.slice(nameOrUrl.lastIndexOf('/') + 1);
  const head = `${prefix}_ready_`;
  return name.startsWith(head) ? name.slice(head.length) : undefined;
}
