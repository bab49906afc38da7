import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { createEventSender } from '../../shared/api/event-sender';
import { type ApiHandler, createApiHandler } from '../../shared/api/handler';
import { type AwsClients, createAwsClients } from '../../shared/aws/clients';
import { DynamoDebouncer } from '../../shared/aws/dynamo-debouncer';
import { DynamoEventWaits } from '../../shared/aws/dynamo-event-waits';
import { DynamoFlowSlots } from '../../shared/aws/dynamo-flow-slots';
import { DynamoJobControl } from '../../shared/aws/dynamo-job-control';
import { DynamoJobGraph } from '../../shared/aws/dynamo-job-graph';
import { DynamoJobIndex } from '../../shared/aws/dynamo-job-index';
import { DynamoJobStore } from '../../shared/aws/dynamo-job-store';
import { DynamoJournal } from '../../shared/aws/dynamo-journal';
import { DynamoPacer } from '../../shared/aws/dynamo-pacer';
import { DynamoRedriveLog } from '../../shared/aws/dynamo-redrive-log';
import { DynamoScheduleStore } from '../../shared/aws/dynamo-schedule-store';
import { payloadBlobs } from '../../shared/aws/s3-blob-store';
import { EventBridgeJobScheduler } from '../../shared/aws/scheduler-job-scheduler';
import { EventBridgeRecurringTrigger } from '../../shared/aws/scheduler-recurring-trigger';
import { SqsDeadLetterQueues } from '../../shared/aws/sqs-dead-letters';
import { SqsJobQueue } from '../../shared/aws/sqs-job-queue';
import type { PlatformConfig } from '../../shared/config';
import { type Clock, systemClock } from '../../shared/core/clock';
import type { JobTypeSpec } from '../../shared/core/job-type';
import type { Metrics } from '../../shared/core/metrics';
import type { JobStore } from '../../shared/core/ports';
import type { CostMeter } from '../../shared/lambda/cost-meter';
import { createLogger, type Logger } from '../../shared/logger';
import { type BatchJobDefinition, createBatchWorker } from '../../shared/runtime/batch-worker';
import type { JobDefinition } from '../../shared/runtime/job-definition';
import { createWorker, type WorkerDeps } from '../../shared/runtime/worker';
import type { ScheduleStore } from '../../shared/schedules/ports';
import type { SupervisorReport } from '../../shared/supervisor/run';
import { deployLocal, type LocalDeployment } from './deploy';
import { type FunctionUrlServerOptions, startFunctionUrlServer } from './function-url';
import type { LocalAws } from './index';
import { startQueueRunner } from './lambda-runner';
import { type LocalAccessOptions, localAccess } from './local-access';
import { type LocalSupervisorOptions, startLocalSupervisor } from './supervisor-loop';

export interface LocalPlatformOptions extends LocalAccessOptions {
  aws: LocalAws;
  /** Resource-name prefix (table, queues, schedule group). */
  prefix: string;
  /**
   * Job definitions (spec + handler) to deploy and run: `defineJob`'s, or `defineBatchJob`'s (a
   * batch type's runner receives up to its `batch.maxSize` messages per call).
   */
  jobs: readonly (JobDefinition | BatchJobDefinition)[];
  /** Specs the API validates against. @default the specs of `jobs` */
  catalog?: readonly JobTypeSpec[];
  /** Clock for the API and workers. @default systemClock */
  clock?: Clock;
  /** Lease length for workers. @default `aws.leaseMs` (moto: sized from its write latency), else 30_000 */
  leaseMs?: number;
  /** Port for the API. @default 0 (random) */
  port?: number;
  /** Start queue runners (the event source mappings). @default true */
  runWorkers?: boolean;
  /** Runner settings, as on an event source mapping. */
  runner?: { batchSize?: number; maxConcurrency?: number; waitTimeSeconds?: number };
  /** Receives before a message moves to its DLQ. @default MAX_RECEIVE_COUNT */
  maxReceiveCount?: number;
  /** Days a finished job is kept (`ORRERY_RETENTION_DAYS`), passed to `deployLocal`. @default 30 */
  retentionDays?: number;
  /**
   * Ready-queue visibility timeout (seconds), for every job type or per type (passed to
   * `deployLocal`). Short values let tests see abandoned messages come back quickly.
   * @default 6 × the worker Lambda's timeout
   */
  visibilityTimeoutSeconds?: number | Record<string, number>;
  /** SDK clients to use (e.g. with counting or fault-injecting middleware). @default createAwsClients() */
  clients?: AwsClients;
  /** Wraps the job store (to observe or fault-inject). */
  wrapStore?: (store: JobStore) => JobStore;
  /** Extra options passed to every worker. */
  worker?: Partial<Pick<WorkerDeps, 'random' | 'owner' | 'clock'>>;
  logger?: Logger;
  /** Where the API and the workers record their metrics. @default none */
  metrics?: Metrics;
  /**
   * Meters the platform's clients and the workers' deliveries (job cost), as the Lambda entry
   * points do. Not applied to `clients` given by the caller. @default no metering
   */
  meter?: CostMeter;
  /**
   * The supervisor (`runSupervisorOnce`, on the platform clock): `{ intervalMs: 5000 }` runs a
   * pass every 5 s; `{}` only on `supervise()`. @default `{}` (no background passes)
   */
  supervisor?: LocalSupervisorOptions;
  /**
   * The API's Function URL: `authType` and `secrets` (signed requests only, checked against
   * known credentials), and a `fallback` for requests the API should not see (the dashboard).
   * @default `authType: 'NONE'`
   */
  functionUrl?: Pick<FunctionUrlServerOptions, 'authType' | 'secrets' | 'fallback'>;
}

export interface LocalPlatform {
  /** Base URL of the API, e.g. `http://127.0.0.1:4600`. */
  url: string;
  config: PlatformConfig;
  deployment: LocalDeployment;
  /** The production SDK clients (built from `AWS_ENDPOINT_URL_*`). */
  clients: AwsClients;
  store: JobStore;
  api: ApiHandler;
  /** The SQS batch handler of each job type, as the Lambda would run it. */
  workers: Record<string, (event: SQSEvent) => Promise<SQSBatchResponse>>;
  /** The recurring schedules' store (the API and the workers use the same). */
  schedules: ScheduleStore;
  /** Runs one supervisor pass at the platform clock's time. */
  supervise(): Promise<SupervisorReport>;
  /** Stops the API server and the runners (the emulators belong to `aws`). */
  stop(): Promise<void>;
}

/**
 * Deploys job types into a running local AWS and runs the platform on it: the API behind a
 * Function URL-shaped HTTP server, and one queue runner (event source mapping) per job type
 * calling the real worker. Everything uses the production code paths and SDK clients.
 *
 * @example
 * const aws = await startLocalAws();
 * const platform = await startLocalPlatform({ aws, prefix: 'dev', jobs: [echo, flaky, sleep] });
 * await fetch(`${platform.url}/jobs`, { method: 'POST', body: ... });
 */
export async function startLocalPlatform(options: LocalPlatformOptions): Promise<LocalPlatform> {
  const { aws } = options;
  aws.applyEnv();
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger({ level: 'warn' });
  const catalog = options.catalog ?? options.jobs.map((job) => job.spec);
  const deployment = await deployLocal(aws, {
    prefix: options.prefix,
    jobTypes: options.jobs.map((job) => {
      const visibility =
        typeof options.visibilityTimeoutSeconds === 'number'
          ? options.visibilityTimeoutSeconds
          : options.visibilityTimeoutSeconds?.[job.spec.type];
      return {
        type: job.spec.type,
        timeoutMs: job.spec.timeoutMs,
        ...(visibility !== undefined ? { visibilityTimeoutSeconds: visibility } : {}),
      };
    }),
    ...(options.maxReceiveCount ? { maxReceiveCount: options.maxReceiveCount } : {}),
    ...(options.retentionDays ? { retentionDays: options.retentionDays } : {}),
  });
  const config = deployment.config;
  const clients = options.clients ?? createAwsClients(options.meter ? { cost: options.meter } : {});
  const baseStore = new DynamoJobStore(clients.dynamo, config.tableName);
  const store = options.wrapStore ? options.wrapStore(baseStore) : baseStore;
  const queue = new SqsJobQueue(clients.sqs);
  const scheduler = new EventBridgeJobScheduler(clients.scheduler, config.scheduleGroup, config.schedulerRoleArn);
  const schedules = new DynamoScheduleStore(clients.dynamo, config.tableName);
  const flow = new DynamoFlowSlots(clients.dynamo, config.tableName);
  const pacer = new DynamoPacer(clients.dynamo, config.tableName);
  const debouncer = new DynamoDebouncer(clients.dynamo, config.tableName);
  const graph = new DynamoJobGraph(clients.dynamo, config.tableName);
  const journal = new DynamoJournal(clients.dynamo, config.tableName);
  const eventWaits = new DynamoEventWaits(clients.dynamo, config.tableName);
  const trigger = new EventBridgeRecurringTrigger(clients.scheduler, config.scheduleGroup, config.schedulerRoleArn);
  // fauxqs' S3 through AWS_ENDPOINT_URL_S3, as a deployed function reaches the stack's bucket
  const blobs = payloadBlobs(config, clients);

  const controlPlane = {
    index: new DynamoJobIndex(clients.dynamo, config.tableName),
    control: new DynamoJobControl(clients.dynamo, config.tableName),
    deadLetters: new SqsDeadLetterQueues(clients.sqs),
    redrives: new DynamoRedriveLog(clients.dynamo, config.tableName),
  };
  const who = localAccess(options);
  const api = createApiHandler({
    access: who.access,
    config,
    catalog,
    store,
    queue,
    scheduler,
    clock,
    logger,
    controlPlane,
    flow,
    pacer,
    debouncer,
    graph,
    journal,
    eventWaits,
    schedules: { store: schedules, trigger },
    ...(blobs ? { blobs } : {}),
    ...(options.metrics ? { metrics: options.metrics } : {}),
  });
  const server = await startFunctionUrlServer({
    handler: api,
    port: options.port ?? 0,
    ...who.functionUrl,
    ...options.functionUrl,
  });

  const workers: LocalPlatform['workers'] = {};
  const runners: { stop(): Promise<void> }[] = [];
  for (const job of options.jobs) {
    const deps: WorkerDeps = {
      config,
      store,
      queue,
      scheduler,
      clock,
      logger,
      schedules,
      graph,
      ...(job.spec.concurrency || job.spec.singleton ? { flow } : {}),
      ...(job.spec.singleton?.mode === 'cancel-running' ? { control: controlPlane.control } : {}),
      ...(job.spec.throttle ? { pacer } : {}),
      ...(job.spec.debounce ? { debouncer } : {}),
      journal,
      eventWaits,
      ...(blobs ? { blobs } : {}),
      // ctx.emit: the API's events service, in the worker's process, as a deployed worker runs it
      events: createEventSender(
        {
          config,
          catalog,
          store,
          queue,
          scheduler,
          clock,
          log: logger,
          flow,
          pacer,
          debouncer,
          graph,
          journal,
          eventWaits,
        },
        `job:${job.spec.type}`,
      ),
      ...((options.leaseMs ?? aws.leaseMs) ? { leaseMs: options.leaseMs ?? aws.leaseMs } : {}),
      ...(options.metrics ? { metrics: options.metrics } : {}),
      ...(options.meter ? { meter: options.meter } : {}),
      ...options.worker,
    };
    const worker = 'runBatch' in job ? createBatchWorker(job, deps) : createWorker(job, deps);
    workers[job.spec.type] = worker;
    const queues = deployment.queues[job.spec.type];
    if (!queues) throw new Error(`deployLocal returned no queues for ${job.spec.type}`);
    if (options.runWorkers !== false) {
      runners.push(
        startQueueRunner({
          queueUrl: queues.url,
          queueArn: queues.arn,
          handler: worker,
          functionName: `${options.prefix}-${job.spec.type}`,
          timeoutMs: job.spec.timeoutMs + 30_000,
          batchSize: job.spec.batch?.maxSize ?? options.runner?.batchSize ?? 10,
          maxConcurrency: options.runner?.maxConcurrency ?? 4,
          waitTimeSeconds: options.runner?.waitTimeSeconds ?? 1,
        }),
      );
    }
  }

  const supervisor = startLocalSupervisor({
    config,
    clients,
    jobs: store,
    schedules,
    clock,
    logger,
    ...(options.supervisor ? { settings: options.supervisor } : {}),
  });

  return {
    url: server.url,
    config,
    deployment,
    clients,
    store,
    api,
    workers,
    schedules,
    supervise: () => supervisor.supervise(),
    async stop() {
      await supervisor.stop();
      await Promise.all(runners.map((runner) => runner.stop()));
      await server.stop();
      clients.dynamo.destroy();
      clients.sqs.destroy();
      clients.scheduler.destroy();
    },
  };
}
