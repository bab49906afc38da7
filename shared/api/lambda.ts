import type { Context } from 'aws-lambda';
import { DynamoDebouncer } from '../aws/dynamo-debouncer';
import { DynamoFlowSlots } from '../aws/dynamo-flow-slots';
import { DynamoJobControl } from '../aws/dynamo-job-control';
import { DynamoJobGraph } from '../aws/dynamo-job-graph';
import { DynamoJobIndex } from '../aws/dynamo-job-index';
import { DynamoJobStore } from '../aws/dynamo-job-store';
import { DynamoJournal } from '../aws/dynamo-journal';
import { DynamoPacer } from '../aws/dynamo-pacer';
import { DynamoScheduleStore } from '../aws/dynamo-schedule-store';
import { EventBridgeJobScheduler } from '../aws/scheduler-job-scheduler';
import { EventBridgeRecurringTrigger } from '../aws/scheduler-recurring-trigger';
import { SqsDeadLetterQueues } from '../aws/sqs-dead-letters';
import { SqsJobQueue } from '../aws/sqs-job-queue';
import type { JobTypeSpec } from '../core/job-type';
import { deployedConfig, invocation, once, startLambdaRuntime } from '../runtime/lambda-runtime';
import { type ApiHandler, createApiHandler } from './handler';

/** The API as Lambda calls it: the Function URL event and the invocation context. */
export type LambdaApiHandler = (event: Parameters<ApiHandler>[0], context?: Context) => ReturnType<ApiHandler>;

/**
 * The API's Lambda entry point: configuration from the environment, SDK clients from the
 * default chain, logger and metrics, built once per container on first use (see
 * shared/runtime/lambda-runtime.ts); each invocation flushes its metrics.
 */
export function createLambdaApiHandler(catalog: readonly JobTypeSpec[]): LambdaApiHandler {
  const start = once(async () => {
    const runtime = await startLambdaRuntime();
    const { clients } = runtime;
    // The catalog's types, checked against the deployed ones by their digest (no call when equal).
    const { config } = await deployedConfig(
      runtime,
      catalog.map((spec) => spec.type),
    );
    const api = createApiHandler({
      config,
      catalog,
      store: new DynamoJobStore(clients.dynamo, config.tableName),
      queue: new SqsJobQueue(clients.sqs),
      scheduler: new EventBridgeJobScheduler(clients.scheduler, config.scheduleGroup, config.schedulerRoleArn),
      flow: new DynamoFlowSlots(clients.dynamo, config.tableName),
      pacer: new DynamoPacer(clients.dynamo, config.tableName),
      debouncer: new DynamoDebouncer(clients.dynamo, config.tableName),
      graph: new DynamoJobGraph(clients.dynamo, config.tableName),
      journal: new DynamoJournal(clients.dynamo, config.tableName),
      controlPlane: {
        index: new DynamoJobIndex(clients.dynamo, config.tableName),
        control: new DynamoJobControl(clients.dynamo, config.tableName),
        deadLetters: new SqsDeadLetterQueues(clients.sqs),
      },
      schedules: {
        store: new DynamoScheduleStore(clients.dynamo, config.tableName),
        trigger: new EventBridgeRecurringTrigger(clients.scheduler, config.scheduleGroup, config.schedulerRoleArn),
      },
      logger: runtime.logger,
      metrics: runtime.metrics,
    });
    return { runtime, api };
  });
  return async (event, context) => {
    const { runtime, api } = await start();
    return invocation(runtime, context, () => api(event));
  };
}
