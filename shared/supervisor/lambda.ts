import { createAwsClients } from '../aws/clients';
import { DynamoDueIndex } from '../aws/dynamo-due-index';
import { DynamoJobStore } from '../aws/dynamo-job-store';
import { DynamoScheduleStore } from '../aws/dynamo-schedule-store';
import { EventBridgeJobScheduler } from '../aws/scheduler-job-scheduler';
import { SqsJobQueue } from '../aws/sqs-job-queue';
import { platformConfigFromEnv } from '../config';
import { type Clock, systemClock } from '../core/clock';
import { createLogger } from '../logger';
import { runSupervisorOnce, type SupervisorDeps, type SupervisorReport } from './run';

/**
 * The supervisor's Lambda entry point (an EventBridge rule invokes it every minute):
 * configuration from the environment, SDK clients from the default chain, both built once per
 * container on first use. Each invocation is one pass; a pass that throws is retried by the
 * next minute's invocation (the checkpoint only moves forward on success).
 */
export function createSupervisorHandler(clock: Clock = systemClock): () => Promise<SupervisorReport> {
  let deps: SupervisorDeps | undefined;
  return async () => {
    if (!deps) {
      const config = platformConfigFromEnv();
      const clients = createAwsClients();
      deps = {
        config,
        index: new DynamoDueIndex(clients.dynamo, config.tableName),
        jobs: new DynamoJobStore(clients.dynamo, config.tableName),
        schedules: new DynamoScheduleStore(clients.dynamo, config.tableName),
        queue: new SqsJobQueue(clients.sqs),
        scheduler: new EventBridgeJobScheduler(clients.scheduler, config.scheduleGroup, config.schedulerRoleArn),
        log: createLogger({ level: config.logLevel }).child({ component: 'supervisor' }),
      };
    }
    return runSupervisorOnce(deps, clock.now());
  };
}
