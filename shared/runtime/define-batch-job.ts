import type { z } from 'zod';
import type { JobTypeSpec, PayloadSchema, SignalSchemas, WorkerPort } from '../core/job-type';
import { ConfigError } from '../errors';
import { invocation, once, startLambdaRuntime } from '../lambda/runtime';
import { type BatchHandler, type BatchJobDefinition, createBatchWorker } from './batch-worker';
import { type LambdaSqsHandler, workerDepsOf } from './define-job';
import type { JobOptions } from './job-definition';

/**
 * Binds a batch handler to a job type whose spec has `batch` (see `defineJobType`). The result's
 * `handler` is the Lambda entry point, fed by an event source mapping whose `BatchSize` and
 * `MaximumBatchingWindowInSeconds` are the spec's `batch.maxSize` and `batch.maxWaitSeconds`
 * (`JobPlatform.addJobType` sets them). The handler gets the jobs of one received batch that it
 * could claim (one call per `batch.key` value) and returns one outcome per item, in order: each
 * job's result or error is recorded on that job alone, so a failed item is retried alone.
 * Durable steps, sleeps and signal waits are not available to a batch handler.
 *
 * @example
 * export const sendEmails = defineBatchJob(emailJob, async (items, ctx) => {
 *   const sent = await mailer.sendMany(items.map((i) => i.payload), { signal: ctx.signal });
 *   return sent.map((r) => (r.ok ? { ok: true, result: { id: r.id } } : { ok: false, error: new Error(r.reason) }));
 * });
 * export const handler = sendEmails.handler;
 */
export function defineBatchJob<
  Schema extends PayloadSchema,
  Type extends string = string,
  Signals extends SignalSchemas = SignalSchemas,
  Result = unknown,
  Needs extends WorkerPort = never,
>(
  // `batch` is checked here rather than in the type: a spec from `defineJobType` types it as optional
  spec: JobTypeSpec<Schema, Type, Signals, Needs>,
  runBatch: BatchHandler<z.output<Schema>, Result>,
  options: JobOptions<z.output<Schema>> = {},
): BatchJobDefinition<Schema, Type, Result> & { handler: LambdaSqsHandler } {
  if (!spec.batch) {
    throw new ConfigError(
      `job type "${spec.type}" has no batch settings: add batch: { maxSize, maxWaitSeconds } to its spec`,
    );
  }
  if (typeof runBatch !== 'function')
    throw new ConfigError(`job type "${spec.type}": the batch handler must be a function`);
  const definition: BatchJobDefinition<Schema, Type, Result> = {
    spec: spec as BatchJobDefinition<Schema, Type, Result>['spec'],
    runBatch,
    ...(options.onFailure ? { onFailure: options.onFailure } : {}),
  };
  const start = once(async () => {
    const runtime = await startLambdaRuntime({ meterCost: true, types: [spec.type] });
    const worker = createBatchWorker(
      definition as unknown as BatchJobDefinition,
      workerDepsOf(spec as JobTypeSpec, runtime),
    );
    return { runtime, worker };
  });
  const handler: LambdaSqsHandler = async (event, context) => {
    const { runtime, worker } = await start();
    return invocation(runtime, context, () => worker(event, context));
  };
  return { ...definition, handler };
}
