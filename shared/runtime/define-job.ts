import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { z } from 'zod';
import { DynamoDebouncer } from '../aws/dynamo-debouncer';
import { DynamoEventWaits } from '../aws/dynamo-event-waits';
import { DynamoFlowSlots } from '../aws/dynamo-flow-slots';
import { DynamoJobControl } from '../aws/dynamo-job-control';
import { DynamoJobGraph } from '../aws/dynamo-job-graph';
import { DynamoJobStore } from '../aws/dynamo-job-store';
import { DynamoJournal } from '../aws/dynamo-journal';
import { DynamoPacer } from '../aws/dynamo-pacer';
import { DynamoScheduleStore } from '../aws/dynamo-schedule-store';
import { payloadBlobs } from '../aws/s3-blob-store';
import { EventBridgeJobScheduler } from '../aws/scheduler-job-scheduler';
import { SqsJobQueue } from '../aws/sqs-job-queue';
import type { BlobStore } from '../core/blobs';
import { systemClock } from '../core/clock';
import type { JobTypeSpec, PayloadSchema, SignalSchemas, WorkerPort } from '../core/job-type';
import { ConfigError } from '../errors';
import { invocation, type LambdaRuntime, once, startLambdaRuntime } from '../lambda/runtime';
import type { JobDefinition, JobHandler, JobOptions } from './job-definition';
import { createWorker, type WorkerDeps } from './worker';

export type LambdaSqsHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

/**
 * Binds a handler to a job type. The result's `handler` is the Lambda entry point: it reads
 * its configuration from the environment on first use and builds its AWS clients, logger and
 * metrics once (see ./lambda-runtime.ts); each invocation flushes its metrics.
 *
 * The handler's payload is the spec's schema output, `ctx.waitForSignal(name)` is typed by the
 * spec's `signals`, and the definition keeps the handler's result type: a client built with
 * definitions (`createClient<typeof jobs>`) types each job's `result` by it.
 *
 * @example
 * export const sendEmail = defineJob(sendEmailJob, async ({ to }, ctx) => {
 *   await mailer.send(to, { signal: ctx.signal });
 *   return { sent: true };
 * });
 * export const handler = sendEmail.handler;
 */
export function defineJob<
  Schema extends PayloadSchema,
  Type extends string = string,
  Signals extends SignalSchemas = SignalSchemas,
  Result = unknown,
  Needs extends WorkerPort = never,
>(
  spec: JobTypeSpec<Schema, Type, Signals, Needs>,
  run: JobHandler<z.output<Schema>, Result, Signals>,
  options: JobOptions<z.output<Schema>> = {},
): JobDefinition<Schema, Type, Signals, Result, Needs> & { handler: LambdaSqsHandler } {
  if (spec.batch) {
    // Its event source mapping hands the worker up to batch.maxSize jobs at once: they belong to one handler call.
    throw new ConfigError(`job type "${spec.type}" has batch settings: define its handler with defineBatchJob`);
  }
  const definition: JobDefinition<Schema, Type, Signals, Result, Needs> = {
    spec,
    run,
    ...(options.onFailure ? { onFailure: options.onFailure } : {}),
    ...(options.version !== undefined ? { version: options.version } : {}),
  };
  const start = once(async () => {
    // Its own type's route; another type's queue (a child it releases) is found by its name.
    const runtime = await startLambdaRuntime({ meterCost: true, types: [spec.type] });
    // Typed wide: the ports are built from the spec's own options, which is what the worker requires of them.
    const worker = createWorker(definition as JobDefinition, {
      ...workerDepsOf(spec, runtime),
      ...(options.events ? { events: options.events({ ...runtime, clock: systemClock }, spec.type) } : {}),
    });
    return { runtime, worker };
  });
  const handler: LambdaSqsHandler = async (event, context) => {
    const { runtime, worker } = await start();
    return invocation(runtime, context, () => worker(event, context));
  };
  return { ...definition, handler };
}

/**
 * The worker's ports on AWS, from the Lambda runtime: the store, queue, scheduler, schedules,
 * journal and job graph of every worker, and the flow ports its spec's options need.
 */
export function workerDepsOf(spec: JobTypeSpec, runtime: LambdaRuntime): WorkerDeps {
  const { config, clients } = runtime;
  return {
    config,
    store: new DynamoJobStore(clients.dynamo, config.tableName),
    queue: new SqsJobQueue(clients.sqs),
    scheduler: new EventBridgeJobScheduler(clients.scheduler, config.scheduleGroup, config.schedulerRoleArn),
    schedules: new DynamoScheduleStore(clients.dynamo, config.tableName),
    journal: new DynamoJournal(clients.dynamo, config.tableName),
    eventWaits: new DynamoEventWaits(clients.dynamo, config.tableName),
    ...(spec.concurrency || spec.singleton ? { flow: new DynamoFlowSlots(clients.dynamo, config.tableName) } : {}),
    ...(spec.throttle ? { pacer: new DynamoPacer(clients.dynamo, config.tableName) } : {}),
    ...(spec.debounce ? { debouncer: new DynamoDebouncer(clients.dynamo, config.tableName) } : {}),
    ...(spec.singleton?.mode === 'cancel-running'
      ? { control: new DynamoJobControl(clients.dynamo, config.tableName) }
      : {}),
    graph: new DynamoJobGraph(clients.dynamo, config.tableName),
    ...blobsOf(config, clients),
    logger: runtime.logger,
    metrics: runtime.metrics,
    ...(runtime.meter ? { meter: runtime.meter } : {}),
  };
}

/** The payload bucket's store, as an optional dep. */
function blobsOf(config: LambdaRuntime['config'], clients: LambdaRuntime['clients']): { blobs?: BlobStore } {
  const blobs = payloadBlobs(config, clients);
  return blobs ? { blobs } : {};
}
