/**
 * `eventsFrom(catalog)`: the event sender of a deployed worker, on the job table and the ready
 * queues through the worker's own SDK clients (./event-sender.ts says why in process).
 */
import type { AwsClients } from '../aws/clients';
import { DynamoDebouncer } from '../aws/dynamo-debouncer';
import { DynamoEventWaits } from '../aws/dynamo-event-waits';
import { DynamoFlowSlots } from '../aws/dynamo-flow-slots';
import { DynamoJobGraph } from '../aws/dynamo-job-graph';
import { DynamoJobStore } from '../aws/dynamo-job-store';
import { DynamoJournal } from '../aws/dynamo-journal';
import { DynamoPacer } from '../aws/dynamo-pacer';
import { EventBridgeJobScheduler } from '../aws/scheduler-job-scheduler';
import { SqsJobQueue } from '../aws/sqs-job-queue';
import { type PlatformConfig, withTypes } from '../config';
import type { Clock } from '../core/clock';
import type { EventSender } from '../core/events';
import type { JobTypeSpec } from '../core/job-type';
import type { Logger } from '../logger';
import { createEventSender } from './event-sender';

/**
 * What a deployed handler's `ctx.emit` sends through (the runtime's `EventSenderFactory`): pass it to `defineJob` as `events`, with
 * the catalog of the job types (specs) that subscribe to the events it sends. The worker routes
 * to their queues by the deployment's queue naming (no environment variable is added).
 *
 * @example
 * export const checkout = defineJob(checkoutJob, async (p, ctx) => {
 *   await ctx.emit(orderPlaced, { orderId: p.orderId, total: p.total });
 * }, { events: eventsFrom(catalog) });
 */
export function eventsFrom(
  catalog: readonly JobTypeSpec[],
): (
  runtime: { config: PlatformConfig; clients: AwsClients; logger: Logger; clock: Clock },
  type: string,
) => EventSender {
  return ({ config, clients, logger, clock }, job) => {
    const routed = withTypes(config, [...new Set([...Object.keys(config.routes), ...catalog.map((s) => s.type)])]);
    const { dynamo } = clients;
    return createEventSender(
      {
        config: routed,
        catalog,
        store: new DynamoJobStore(dynamo, config.tableName),
        queue: new SqsJobQueue(clients.sqs),
        scheduler: new EventBridgeJobScheduler(clients.scheduler, config.scheduleGroup, config.schedulerRoleArn),
        flow: new DynamoFlowSlots(dynamo, config.tableName),
        pacer: new DynamoPacer(dynamo, config.tableName),
        debouncer: new DynamoDebouncer(dynamo, config.tableName),
        graph: new DynamoJobGraph(dynamo, config.tableName),
        journal: new DynamoJournal(dynamo, config.tableName),
        eventWaits: new DynamoEventWaits(dynamo, config.tableName),
        clock,
        log: logger,
      },
      `job:${job}`,
    );
  };
}
