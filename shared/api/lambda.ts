import { createAwsClients } from '../aws/clients';
import { DynamoDebouncer } from '../aws/dynamo-debouncer';
import { DynamoFlowSlots } from '../aws/dynamo-flow-slots';
import { DynamoJobControl } from '../aws/dynamo-job-control';
import { DynamoJobIndex } from '../aws/dynamo-job-index';
import { DynamoJobStore } from '../aws/dynamo-job-store';
import { DynamoPacer } from '../aws/dynamo-pacer';
import { DynamoScheduleStore } from '../aws/dynamo-schedule-store';
import { EventBridgeJobScheduler } from '../aws/scheduler-job-scheduler';
import { EventBridgeRecurringTrigger } from '../aws/scheduler-recurring-trigger';
import { SqsDeadLetterQueues } from '../aws/sqs-dead-letters';
import { SqsJobQueue } from '../aws/sqs-job-queue';
import { platformConfigFromEnv } from '../config';
import type { JobTypeSpec } from '../core/job-type';
import { type ApiHandler, createApiHandler } from './handler';

/**
 * The API's Lambda entry point: configuration from the environment, SDK clients from the
 * default chain, both built once per container on first use.
 */
export function createLambdaApiHandler(catalog: readonly JobTypeSpec[]): ApiHandler {
  let api: ApiHandler | undefined;
  return (event) => {
    if (!api) {
      const config = platformConfigFromEnv();
      const clients = createAwsClients();
      api = createApiHandler({
        config,
        catalog,
        store: new DynamoJobStore(clients.dynamo, config.tableName),
        queue: new SqsJobQueue(clients.sqs),
        scheduler: new EventBridgeJobScheduler(clients.scheduler, config.scheduleGroup, config.schedulerRoleArn),
        flow: new DynamoFlowSlots(clients.dynamo, config.tableName),
        pacer: new DynamoPacer(clients.dynamo, config.tableName),
        debouncer: new DynamoDebouncer(clients.dynamo, config.tableName),
        controlPlane: {
          index: new DynamoJobIndex(clients.dynamo, config.tableName),
          control: new DynamoJobControl(clients.dynamo, config.tableName),
          deadLetters: new SqsDeadLetterQueues(clients.sqs),
        },
        schedules: {
          store: new DynamoScheduleStore(clients.dynamo, config.tableName),
          trigger: new EventBridgeRecurringTrigger(clients.scheduler, config.scheduleGroup, config.schedulerRoleArn),
        },
      });
    }
    return api(event);
  };
}
