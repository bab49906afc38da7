import type { Context } from 'aws-lambda';
import { DynamoDueIndex } from '../aws/dynamo-due-index';
import { DynamoJobGraph } from '../aws/dynamo-job-graph';
import { DynamoJobStore } from '../aws/dynamo-job-store';
import { DynamoScheduleStore } from '../aws/dynamo-schedule-store';
import { EventBridgeJobScheduler } from '../aws/scheduler-job-scheduler';
import { SqsJobQueue } from '../aws/sqs-job-queue';
import { type Clock, systemClock } from '../core/clock';
import { deployedConfig, invocation, type LambdaRuntime, once, startLambdaRuntime } from '../lambda/runtime';
import { runSupervisorOnce, type SupervisorDeps, type SupervisorReport } from './run';

/**
 * The supervisor's Lambda entry point (an EventBridge rule invokes it every minute):
 * configuration from the environment, SDK clients from the default chain, logger and metrics,
 * built once per container on first use. Each invocation is one pass; a pass that throws is retried by the
 * next minute's invocation (a save of the checkpoint lists every failed minute it moves past).
 */
export function createSupervisorHandler(
  clock: Clock = systemClock,
): (event?: unknown, context?: Context) => Promise<SupervisorReport> {
  const start = once(async (): Promise<{ runtime: LambdaRuntime; deps: SupervisorDeps; settled: boolean }> => {
    const runtime = await startLambdaRuntime();
    const { clients } = runtime;
    const { config, settled } = await deployedConfig(runtime);
    const deps: SupervisorDeps = {
      config,
      index: new DynamoDueIndex(clients.dynamo, config.tableName),
      jobs: new DynamoJobStore(clients.dynamo, config.tableName),
      schedules: new DynamoScheduleStore(clients.dynamo, config.tableName),
      queue: new SqsJobQueue(clients.sqs),
      scheduler: new EventBridgeJobScheduler(clients.scheduler, config.scheduleGroup, config.schedulerRoleArn),
      log: runtime.logger.child({ component: 'supervisor' }),
      graph: new DynamoJobGraph(clients.dynamo, config.tableName),
    };
    return { runtime, deps, settled };
  });
  return async (_event, context) => {
    const started = await start();
    const { runtime, deps } = started;
    // The deployed types are listed from their ready queues (ListQueues); a listing taken while a
    // deploy was creating or deleting queues is taken again before each pass until it matches.
    if (!started.settled) {
      const again = await deployedConfig(runtime);
      deps.config = again.config;
      started.settled = again.settled;
    }
    return invocation(runtime, context, () => runSupervisorOnce(deps, clock.now()));
  };
}
