/**
 * The supervisor on local AWS: the production `runSupervisorOnce` with the production adapters,
 * on demand (`supervise()`) or every few seconds (what the EventBridge rule does every minute in
 * AWS). `npm run dev` and tests reach it through `startLocalPlatform({ supervisor })`.
 */
import type { AwsClients } from '../../shared/aws/clients';
import { DynamoDueIndex } from '../../shared/aws/dynamo-due-index';
import { DynamoJobGraph } from '../../shared/aws/dynamo-job-graph';
import { EventBridgeJobScheduler } from '../../shared/aws/scheduler-job-scheduler';
import { SqsJobQueue } from '../../shared/aws/sqs-job-queue';
import type { PlatformConfig } from '../../shared/config';
import type { Clock } from '../../shared/core/clock';
import type { JobStore } from '../../shared/core/ports';
import { errorFields, type Logger } from '../../shared/logger';
import type { ScheduleStore } from '../../shared/schedules/ports';
import type { SupervisorOptions } from '../../shared/supervisor/plan';
import { runSupervisorOnce, type SupervisorDeps, type SupervisorReport } from '../../shared/supervisor/run';

/** `supervisor` option of `startLocalPlatform`. */
export interface LocalSupervisorOptions {
  /** Run a pass every `intervalMs` (real time). Without it, passes run only when `supervise()` is called. */
  intervalMs?: number;
  /** Overrides of the supervisor's defaults. */
  options?: Partial<SupervisorOptions>;
}

/** A supervisor bound to one local platform. */
export interface LocalSupervisor {
  /** Runs one pass now (at the platform clock's time); passes never overlap. */
  supervise(): Promise<SupervisorReport>;
  stop(): Promise<void>;
}

export function startLocalSupervisor(input: {
  config: PlatformConfig;
  clients: AwsClients;
  jobs: JobStore;
  schedules: ScheduleStore;
  clock: Clock;
  logger: Logger;
  settings?: LocalSupervisorOptions;
}): LocalSupervisor {
  const deps: SupervisorDeps = {
    config: input.config,
    index: new DynamoDueIndex(input.clients.dynamo, input.config.tableName),
    jobs: input.jobs,
    schedules: input.schedules,
    queue: new SqsJobQueue(input.clients.sqs),
    scheduler: new EventBridgeJobScheduler(
      input.clients.scheduler,
      input.config.scheduleGroup,
      input.config.schedulerRoleArn,
    ),
    log: input.logger.child({ component: 'supervisor' }),
    graph: new DynamoJobGraph(input.clients.dynamo, input.config.tableName),
    ...(input.settings?.options ? { options: input.settings.options } : {}),
  };
  let tail: Promise<unknown> = Promise.resolve();
  const supervise = (): Promise<SupervisorReport> => {
    const pass = tail.then(() => runSupervisorOnce(deps, input.clock.now()));
    tail = pass.catch(() => undefined);
    return pass;
  };
  let timer: NodeJS.Timeout | undefined;
  if (input.settings?.intervalMs !== undefined) {
    timer = setInterval(() => {
      supervise().catch((error: unknown) => deps.log.error('supervisor pass failed', errorFields(error)));
    }, input.settings.intervalMs);
    timer.unref();
  }
  return {
    supervise,
    async stop() {
      if (timer) clearInterval(timer);
      await tail;
    },
  };
}
