import { GetQueueAttributesCommand, type Message, SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { lambdaContext, withLambdaTimeout } from './lambda-context';
import { deleteRecords, failedMessageIds, receiveBatch, toSqsEvent } from './sqs-event';

/** A worker Lambda's handler, as wired to an SQS trigger with `ReportBatchItemFailures`. */
// biome-ignore lint/suspicious/noConfusingVoidType: same as aws-lambda's SQSHandler: a handler may return nothing
export type SqsLambdaHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | void>;

/** The event source mapping's settings (Lambda's names in comments). */
export interface QueueRunnerOptions {
  queueUrl: string;
  queueArn: string;
  handler: SqsLambdaHandler;
  functionName: string;
  /** BatchSize. @default 10 */
  batchSize?: number;
  /** ScalingConfig.MaximumConcurrency (Lambda's minimum is 2; 1 is allowed here). @default 2 */
  maxConcurrency?: number;
  /** Overrides the queue's visibility timeout on each receive. @default the queue's */
  visibilityTimeoutSeconds?: number;
  /** Long-poll wait per receive; also bounds how long `stop()` waits for a poll. @default 1 */
  waitTimeSeconds?: number;
  /** The function's timeout: the handler's outcome is ignored (batch fails) after it. @default 30_000 */
  timeoutMs?: number;
  /** @default `new SQSClient({})`, i.e. AWS_ENDPOINT_URL_SQS / AWS_REGION from the environment */
  sqs?: SQSClient;
}

/** Live counters of a runner. */
export interface RunnerStats {
  /** Handler calls. */
  invocations: number;
  /** Records delivered to the handler. */
  messages: number;
  /** Records not deleted (reported failures, or every record of a thrown/timed-out batch). */
  failures: number;
  /** Handler errors, timeouts and SQS errors, newest last (at most 50). */
  errors: unknown[];
}

/** A running emulated event source mapping. */
export interface QueueRunner {
  readonly stats: RunnerStats;
  /** Stops polling; resolves after the current poll and every in-flight invocation have finished. */
  stop(): Promise<void>;
}

/** Result of one {@link runOnce}. */
export interface RunOnceResult {
  /** Message ids the handler received (empty if the queue had nothing visible). */
  messageIds: string[];
  /** Ids left in the queue to come back after the visibility timeout. */
  failedIds: string[];
  /** The handler's error (or timeout), if it threw. */
  error?: unknown;
}

/**
 * Emulates Lambda's SQS event source mapping: long-polls the queue with the real SQS client,
 * hands batches to `handler` as real-shaped `SQSEvent`s with a Lambda `Context`, at most
 * `maxConcurrency` at a time, then settles each batch the way Lambda does with
 * `ReportBatchItemFailures`: a resolved result deletes every record not listed in
 * `batchItemFailures`; a throw, a timeout, or an invalid `itemIdentifier` deletes nothing, so
 * the whole batch comes back after the visibility timeout (and counts toward the redrive
 * policy's `maxReceiveCount`).
 *
 * @example
 * const runner = startQueueRunner({
 *   queueUrl: deployment.queues.echo.url,
 *   queueArn: deployment.queues.echo.arn,
 *   functionName: 'orrery-echo',
 *   handler: workerHandler,
 * });
 * // ... enqueue jobs ...
 * await drain({ queueUrl: deployment.queues.echo.url });
 * await runner.stop();
 */
export function startQueueRunner(options: QueueRunnerOptions): QueueRunner {
  const sqs = options.sqs ?? new SQSClient({});
  const maxConcurrency = Math.max(1, options.maxConcurrency ?? 2);
  const stats: RunnerStats = { invocations: 0, messages: 0, failures: 0, errors: [] };
  const inFlight = new Set<Promise<void>>();
  let running = true;

  const loop = (async () => {
    while (running) {
      if (inFlight.size >= maxConcurrency) {
        await Promise.race(inFlight);
        continue;
      }
      let messages: Message[];
      try {
        messages = await receiveBatch(sqs, {
          queueUrl: options.queueUrl,
          batchSize: options.batchSize ?? 10,
          waitTimeSeconds: options.waitTimeSeconds ?? 1,
          ...(options.visibilityTimeoutSeconds !== undefined
            ? { visibilityTimeoutSeconds: options.visibilityTimeoutSeconds }
            : {}),
        });
      } catch (error) {
        record(stats, error);
        if (running) await new Promise((r) => setTimeout(r, 250));
        continue;
      }
      if (messages.length === 0) continue;
      const invocation = invokeAndSettle(sqs, options, messages, stats).then(
        () => {},
        (error) => record(stats, error),
      );
      inFlight.add(invocation);
      void invocation.finally(() => inFlight.delete(invocation));
    }
  })();

  return {
    stats,
    async stop() {
      running = false;
      await loop;
      await Promise.all(inFlight);
      if (!options.sqs) sqs.destroy();
    },
  };
}

/**
 * Receives one batch (long-polling up to `waitTimeSeconds`), invokes the handler once and
 * settles the batch like {@link startQueueRunner}. Deterministic: handy in tests that step
 * through retries.
 *
 * @example
 * const { messageIds, failedIds } = await runOnce({ queueUrl, queueArn, functionName: 'w', handler });
 */
export async function runOnce(options: Omit<QueueRunnerOptions, 'maxConcurrency'>): Promise<RunOnceResult> {
  const sqs = options.sqs ?? new SQSClient({});
  try {
    const messages = await receiveBatch(sqs, {
      queueUrl: options.queueUrl,
      batchSize: options.batchSize ?? 10,
      waitTimeSeconds: options.waitTimeSeconds ?? 1,
      ...(options.visibilityTimeoutSeconds !== undefined
        ? { visibilityTimeoutSeconds: options.visibilityTimeoutSeconds }
        : {}),
    });
    if (messages.length === 0) return { messageIds: [], failedIds: [] };
    const stats: RunnerStats = { invocations: 0, messages: 0, failures: 0, errors: [] };
    return await invokeAndSettle(sqs, options, messages, stats);
  } finally {
    if (!options.sqs) sqs.destroy();
  }
}

/** Options for {@link drain}. */
export interface DrainOptions {
  queueUrl: string;
  /** @default 10_000 */
  timeoutMs?: number;
  /** @default 50 */
  pollMs?: number;
  /** Also wait for delayed messages. @default false */
  includeDelayed?: boolean;
  /** @default `new SQSClient({})` */
  sqs?: SQSClient;
}

/**
 * Waits until the queue has no visible and no in-flight messages (per
 * GetQueueAttributes), e.g. until a runner has processed everything. Throws with the
 * counts on timeout.
 *
 * @example
 * await drain({ queueUrl, timeoutMs: 5_000 });
 */
export async function drain(options: DrainOptions): Promise<void> {
  const sqs = options.sqs ?? new SQSClient({});
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  const names = ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] as const;
  const attributeNames = options.includeDelayed
    ? [...names, 'ApproximateNumberOfMessagesDelayed' as const]
    : [...names];
  try {
    for (;;) {
      const out = await sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: options.queueUrl, AttributeNames: attributeNames }),
      );
      const counts = attributeNames.map((name) => Number(out.Attributes?.[name] ?? 0));
      if (counts.every((count) => count === 0)) return;
      if (Date.now() > deadline) {
        const detail = attributeNames.map((name, i) => `${name}=${counts[i]}`).join(', ');
        throw new Error(`queue ${options.queueUrl} not drained: ${detail}`);
      }
      await new Promise((r) => setTimeout(r, options.pollMs ?? 50));
    }
  } finally {
    if (!options.sqs) sqs.destroy();
  }
}

async function invokeAndSettle(
  sqs: SQSClient,
  options: Omit<QueueRunnerOptions, 'maxConcurrency'>,
  messages: Message[],
  stats: RunnerStats,
): Promise<RunOnceResult> {
  const event = toSqsEvent(messages, options.queueArn);
  const timeoutMs = options.timeoutMs ?? 30_000;
  const context = lambdaContext({
    functionName: options.functionName,
    timeoutMs,
    region: event.Records[0]?.awsRegion ?? 'us-east-1',
  });
  stats.invocations += 1;
  stats.messages += event.Records.length;
  let outcome: { ok: true; result: unknown } | { ok: false; error: unknown };
  try {
    outcome = { ok: true, result: await withLambdaTimeout(timeoutMs, () => options.handler(event, context)) };
  } catch (error) {
    outcome = { ok: false, error };
    record(stats, error);
  }
  const failed = failedMessageIds(event, outcome);
  if (outcome.ok && failed === 'all') {
    outcome = {
      ok: false,
      error: new Error('invalid batchItemFailures (unknown or empty itemIdentifier): whole batch failed'),
    };
    record(stats, outcome.error);
  }
  const keep = failed === 'all' ? new Set(event.Records.map((r) => r.messageId)) : failed;
  stats.failures += keep.size;
  const toDelete = event.Records.filter((r) => !keep.has(r.messageId));
  if (toDelete.length > 0) {
    const notDeleted = await deleteRecords(sqs, options.queueUrl, toDelete);
    if (notDeleted.length > 0) record(stats, new Error(`DeleteMessageBatch failed for ${notDeleted.join(', ')}`));
  }
  return {
    messageIds: event.Records.map((r) => r.messageId),
    failedIds: [...keep],
    ...(outcome.ok ? {} : { error: outcome.error }),
  };
}

function record(stats: RunnerStats, error: unknown): void {
  stats.errors.push(error);
  if (stats.errors.length > 50) stats.errors.shift();
}
