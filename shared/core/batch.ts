/**
 * Batch handlers, domain side: a job type whose spec has `batch` is run by one handler call per
 * SQS event (per key group), over up to `maxSize` jobs. No AWS here: the limits below are the
 * Lambda SQS event source mapping's, which carries the batch (see docs/workflows.md, "Batch
 * handlers"); the worker side is shared/runtime/batch-worker.ts.
 */

/**
 * Largest batch: the event source mapping's `BatchSize` on a standard queue (a FIFO queue allows
 * 10; Orrery's ready queues are standard queues, infra/constructs/job-queue.ts).
 */
export const MAX_BATCH_SIZE = 10_000;
/** Batches of more than this many messages need a batching window of at least 1 s (Lambda's rule). */
export const MAX_BATCH_SIZE_WITHOUT_WINDOW = 10;
/** Longest batching window: the event source mapping's `MaximumBatchingWindowInSeconds`. */
export const MAX_BATCH_WAIT_SECONDS = 300;

/**
 * A batch handler's settings. Lambda's event source mapping gathers up to `maxSize` messages,
 * waiting up to `maxWaitSeconds` for them, and invokes the worker once; the worker claims each
 * job and calls the handler once with the jobs it claimed (once per `key` group). A batch may be
 * smaller: Lambda also ends it at 6 MB of invocation payload, which with each record's SQS
 * envelope (about 0.9 KB for a job message) is near 6,500 records.
 *
 * @example
 * // up to 100 e-mails per call, gathered for at most 5 s, one call per sender
 * batch: { maxSize: 100, maxWaitSeconds: 5, key: (p) => p.from }
 */
export interface BatchOptions<Payload = never> {
  /**
   * Most jobs per handler call: the event source mapping's `BatchSize`, 1 to 10,000 (more than
   * 10 needs `maxWaitSeconds` ≥ 1).
   */
  readonly maxSize: number;
  /**
   * Longest Lambda gathers messages before it invokes the worker, in seconds: the event source
   * mapping's `MaximumBatchingWindowInSeconds`, 0 to 300. A job may wait this long before it starts.
   */
  readonly maxWaitSeconds: number;
  /**
   * Groups a received batch: the handler is called once per key value, with that value's jobs.
   * @default one group: every job of the batch in one call
   */
  key?(payload: Payload): string;
}

/** Why `value` is not a valid {@link BatchOptions}, or undefined when it is. */
export function batchProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return 'batch must be an object { maxSize, maxWaitSeconds, key? }';
  const { maxSize, maxWaitSeconds, key } = value as Record<string, unknown>;
  const int = (v: unknown, min: number, max: number) =>
    typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
  if (!int(maxSize, 1, MAX_BATCH_SIZE)) {
    return `batch.maxSize must be an integer from 1 to ${MAX_BATCH_SIZE} (the SQS event source mapping's BatchSize on a standard queue; got ${String(maxSize)})`;
  }
  if (!int(maxWaitSeconds, 0, MAX_BATCH_WAIT_SECONDS)) {
    return `batch.maxWaitSeconds must be an integer from 0 to ${MAX_BATCH_WAIT_SECONDS} (the SQS event source mapping's MaximumBatchingWindowInSeconds; got ${String(maxWaitSeconds)})`;
  }
  if ((maxSize as number) > MAX_BATCH_SIZE_WITHOUT_WINDOW && maxWaitSeconds === 0) {
    return `batch.maxSize over ${MAX_BATCH_SIZE_WITHOUT_WINDOW} needs batch.maxWaitSeconds of at least 1 (Lambda refuses a larger BatchSize without a batching window)`;
  }
  if (key !== undefined && typeof key !== 'function') return 'batch.key must be a function of the payload';
  return undefined;
}
