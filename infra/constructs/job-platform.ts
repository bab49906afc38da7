import { CfnOutput, type Duration, NestedStack, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type { Grant as IamGrant, IGrantable } from 'aws-cdk-lib/aws-iam';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { ENV } from '../../shared/config';
import type { Grant as AccessGrant, ControlAction } from '../../shared/core/access';
import { isMetricsNamespace, METRICS_NAMESPACE } from '../../shared/core/metrics';
import { lambdaTimeoutSeconds } from '../../shared/core/queue-settings';
import type { LogLevel } from '../../shared/logger';
import { ApiGrants } from './api-grants';
import { EnqueueApi } from './enqueue-api';
import { JobQueue } from './job-queue';
import { JobTable } from './job-table';
import { type JobTypeOptions, pascalCase, resolveJobTypeOptions } from './job-type-options';
import { JobWorker } from './job-worker';
import { PayloadBucket, payloadBucketName } from './payload-bucket';
import { PlatformAlarms } from './platform-alarms';
import { PlatformDashboard } from './platform-dashboard';
import { QueueNaming } from './queue-naming';
import { SchedulerAccess } from './scheduler-access';
import { Supervisor } from './supervisor';

export type { JobTypeInfo, JobTypeOptions } from './job-type-options';

export interface JobPlatformProps {
  /**
   * Days a finished job stays in the table before DynamoDB TTL removes it (1–3650).
   * @default 30
   */
  readonly retentionDays?: number;
  /**
   * What CloudFormation does with the job table when it leaves the stack.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * DynamoDB deletion protection on the job table.
   * @default true unless `removalPolicy` is DESTROY
   */
  readonly deletionProtection?: boolean;
  /**
   * Memory of the enqueue API function in MB.
   * @default 512
   */
  readonly apiMemoryMb?: number;
  /**
   * Timeout of the enqueue API function.
   * @default Duration.seconds(10)
   */
  readonly apiTimeout?: Duration;
  /**
   * Handler file of the enqueue API, absolute or relative to the repository root (from the
   * installed package: to the working directory). It exports
   * `handler = createLambdaApiHandler(catalog)` with the specs of the job types the API accepts.
   * @default 'functions/api.ts' (the example catalog) in this repository; required from the package
   */
  readonly apiEntry?: string;
  /**
   * Schedule group for delayed jobs and long retries.
   * @default `${stackName}-jobs`
   */
  readonly scheduleGroupName?: string;
  /**
   * `ORRERY_LOG_LEVEL` of every function.
   * @default 'info'
   */
  readonly logLevel?: LogLevel;
  /**
   * Retention of every function's log group.
   * @default RetentionDays.ONE_MONTH
   */
  readonly logRetention?: RetentionDays;
  /**
   * Add stack outputs `ApiUrl`, `TableName`, `ScheduleGroupName`, and per type
   * `QueueUrlBase` and `QueueNamePrefix` (a type's ready queue URL is
   * `<QueueUrlBase><QueueNamePrefix>_ready_<type>`, its DLQ's `…_dlq_<type>`). Output ids are
   * stack-wide, so one platform per stack.
   * @default true
   */
  readonly outputs?: boolean;
  /**
   * Trace the AWS requests of every function: the Powertools Tracer captures the SDK clients, so
   * each request is an X-Ray subsegment of the invocation's trace (`ORRERY_TRACING`). The
   * functions' Lambda active tracing is on either way (the invocation's own segment); this adds
   * the Tracer's cold-start cost (it is loaded only when on) and larger traces.
   * @default false
   */
  readonly tracing?: boolean;
  /**
   * CloudWatch namespace of the job metrics (`ORRERY_METRICS_NAMESPACE`): give each platform in
   * an account and Region its own, or their metrics and alarms mix.
   * @default 'Orrery'
   */
  readonly metricsNamespace?: string;
  /**
   * Where the platform's alarms send their ALARM and OK notifications (see {@link PlatformAlarms}).
   * A topic encrypted with a customer managed KMS key must let CloudWatch use the key.
   * @default no notification: the alarms only change state
   */
  readonly alarmTopic?: ITopic;
  /**
   * A job type's failure rate (`failed / (succeeded + failed)` over 5 minutes, 0–1) above which its alarm fires.
   * @default 0.1
   */
  readonly failureRateThreshold?: number;
  /**
   * Age of a ready queue's oldest message above which its alarm fires. Keep it above the
   * backoff of your jobs' first retries (a message waiting for one counts).
   * @default Duration.hours(1)
   */
  readonly oldestMessageAgeThreshold?: Duration;
  /**
   * Job types with rows of their own on the dashboard (8 widgets each; at most 60): the ones
   * past it are named in a note, and the dashboard's "every type" graphs show all types.
   * @default 40
   */
  readonly dashboardTypeRows?: number;
  /**
   * Prefix of every queue's name: a job type's ready queue is `<prefix>_ready_<type>`, its DLQ
   * `<prefix>_dlq_<type>`. Functions derive queue URLs and ARNs from it, so their environment does
   * not grow with the job types. Queue names are unique per account and Region: give each
   * platform there its own. Changing it replaces every queue (messages in them are lost; the
   * supervisor re-sends the jobs that were waiting).
   * @default the stack name (up to 32 characters; a longer one is cut to 23 and a hash added)
   */
  readonly queueNamePrefix?: string;
  /**
   * Name of the CloudWatch dashboard.
   * @default a name CloudFormation generates
   */
  readonly dashboardName?: string;
}

/** Options of the grants that can be narrowed to some job types. */
export interface TypeScopedGrantOptions {
  /**
   * The job types the grant covers: each must be added with {@link JobPlatform.addJobType}
   * (before or after the grant; checked at synthesis).
   * @default every job type, including those added later
   */
  readonly types?: readonly string[];
}

/** Options of {@link JobPlatform.grantControl}. */
export interface ControlGrantOptions extends TypeScopedGrantOptions {
  /**
   * The control actions granted: `cancel`, `retry`, `rerun`, `bulk` (the bulk cancel and retry
   * of `POST /jobs/bulk`).
   * @default every control action
   */
  readonly actions?: readonly ControlAction[];
}

/**
 * What {@link JobPlatform.addJobType} created for one job type: a stable handle.
 *
 * @example
 * const reports = platform.addJobType({ spec: reportJob, entry: 'jobs/report.ts' });
 * bucket.grantRead(reports.worker); // the worker's role only
 * reports.worker.handler.metricErrors();
 */
export interface JobTypeResources {
  readonly type: string;
  /** The type's ready queue and dead-letter queue. */
  readonly queues: JobQueue;
  /**
   * The type's worker: grantable (`grantPrincipal` is its execution role), with the Lambda as
   * `worker.handler`.
   */
  readonly worker: JobWorker;
}

/**
 * Orrery in one construct: the job table, the Scheduler group and role, and the enqueue API
 * (a Lambda Function URL with IAM auth). Each {@link addJobType} adds that type's own ready
 * queue, dead-letter queue and worker Lambda.
 *
 * @example
 * const platform = new JobPlatform(this, 'Orrery', { apiEntry: 'jobs/api.ts', retentionDays: 14 });
 * platform.addJobType({ spec: sendEmailJob, entry: 'jobs/send-email.ts', concurrency: 20 });
 * platform.grantEnqueue(backendRole, { types: ['send-email'] });
 */
export class JobPlatform extends Construct {
  readonly jobTable: JobTable;
  readonly scheduler: SchedulerAccess;
  readonly api: EnqueueApi;
  /** Repairs lost work and fires missed schedule fires, every minute. */
  readonly supervisor: Supervisor;
  /** The CloudWatch alarms; each job type adds its own. */
  readonly alarms: PlatformAlarms;
  /** The CloudWatch dashboard; each job type adds its rows. */
  readonly dashboard: PlatformDashboard;
  /** How the platform names its queues (`<prefix>_ready_<type>`, `<prefix>_dlq_<type>`). */
  readonly queueNaming: QueueNaming;
  /** Who may do what on the API: the grants, compiled into one SSM parameter the API reads. */
  readonly grants: ApiGrants;
  /** Values too large for an item (payloads, uploads, results, step results): shared/core/blobs.ts. */
  readonly payloads: PayloadBucket;
  private readonly types = new Map<string, JobTypeResources>();
  private readonly environment: Record<string, string>;
  private readonly logRetention: RetentionDays;
  private readonly outputs: boolean;

  constructor(scope: Construct, id: string, props: JobPlatformProps = {}) {
    super(scope, id);
    const retentionDays = props.retentionDays ?? 30;
    if (!Number.isInteger(retentionDays) || retentionDays < 1 || retentionDays > 3650) {
      throw new Error(`JobPlatform: retentionDays must be an integer from 1 to 3650 (got ${retentionDays})`);
    }
    const apiMemoryMb = props.apiMemoryMb ?? 512;
    if (!Number.isInteger(apiMemoryMb) || apiMemoryMb < 128 || apiMemoryMb > 10_240) {
      throw new Error(`JobPlatform: apiMemoryMb must be an integer from 128 to 10240 (got ${apiMemoryMb})`);
    }
    const namespace = props.metricsNamespace ?? METRICS_NAMESPACE;
    if (!isMetricsNamespace(namespace)) {
      throw new Error(`JobPlatform: metricsNamespace must be a CloudWatch namespace of our own (got ${namespace})`);
    }
    this.logRetention = props.logRetention ?? RetentionDays.ONE_MONTH;
    this.outputs = props.outputs ?? true;

    this.jobTable = new JobTable(this, 'Jobs', {
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
      deletionProtection: props.deletionProtection,
    });
    this.scheduler = new SchedulerAccess(this, 'Scheduler', { scheduleGroupName: props.scheduleGroupName });
    this.queueNaming = new QueueNaming(this, props.queueNamePrefix);
    claimPrefix(this, this.queueNaming.prefix);
    this.scheduler.allowSendTo(this.queueNaming.readyQueueArns);
    this.payloads = new PayloadBucket(this, 'Payloads', {
      bucketName: payloadBucketName(this.queueNaming.prefix),
      retentionDays,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
    this.environment = {
      ...this.queueNaming.environment(),
      [ENV.payloadBucket]: this.payloads.bucket.bucketName,
      [ENV.table]: this.jobTable.table.tableName,
      [ENV.scheduleGroup]: this.scheduler.group.scheduleGroupName,
      [ENV.schedulerRoleArn]: this.scheduler.role.roleArn,
      [ENV.retentionDays]: String(retentionDays),
      [ENV.logLevel]: props.logLevel ?? 'info',
      [ENV.metricsNamespace]: namespace,
      ...(props.tracing ? { [ENV.tracing]: 'true' } : {}),
    };
    this.grants = new ApiGrants(this, 'Grants', { jobTypes: () => this.types.keys() });
    this.api = new EnqueueApi(this, 'Api', {
      jobTable: this.jobTable,
      scheduler: this.scheduler,
      naming: this.queueNaming,
      environment: this.environment,
      grants: this.grants,
      entry: props.apiEntry,
      memorySize: apiMemoryMb,
      timeout: props.apiTimeout,
      logGroupRetention: this.logRetention,
    });
    this.payloads.grantApi(this.api.handler);
    this.supervisor = new Supervisor(this, 'Supervisor', {
      jobTable: this.jobTable,
      scheduler: this.scheduler,
      naming: this.queueNaming,
      environment: this.environment,
      logGroupRetention: this.logRetention,
    });
    const watched = {
      table: this.jobTable.table,
      api: this.api.handler,
      supervisor: this.supervisor.handler,
      namespace,
    };
    this.alarms = new PlatformAlarms(this, 'Alarms', {
      ...watched,
      alarmTopic: props.alarmTopic,
      failureRateThreshold: props.failureRateThreshold,
      oldestMessageAgeThreshold: props.oldestMessageAgeThreshold,
    });
    this.dashboard = new PlatformDashboard(this, 'Dashboard', {
      ...watched,
      dashboardName: props.dashboardName,
      ...(props.dashboardTypeRows !== undefined ? { maxTypeRows: props.dashboardTypeRows } : {}),
      alarms: [...this.alarms.alarms.values()],
    });
    this.node.addValidation({
      validate: () => (this.types.size === 0 ? ['JobPlatform has no job types: call addJobType() at least once'] : []),
    });

    if (this.outputs) {
      const stack = Stack.of(this);
      new CfnOutput(stack, 'ApiUrl', {
        value: this.api.url.url,
        description: 'Enqueue API (SigV4-signed requests only)',
      });
      new CfnOutput(stack, 'TableName', { value: this.jobTable.table.tableName, description: 'DynamoDB job table' });
      // Queue URLs are <QueueUrlBase><QueueNamePrefix>_ready_<type> (and _dlq_<type>): two outputs
      // for any number of types (CloudFormation allows 200 outputs per stack)
      new CfnOutput(stack, 'QueueUrlBase', {
        value: this.environment[ENV.queueUrlBase] ?? '',
        description: 'What every queue URL of the platform starts with',
      });
      new CfnOutput(stack, 'QueueNamePrefix', {
        value: this.queueNaming.prefix,
        description: "A type's ready queue is <prefix>_ready_<type>, its DLQ <prefix>_dlq_<type>",
      });
      new CfnOutput(stack, 'ScheduleGroupName', {
        value: this.scheduler.group.scheduleGroupName,
        description: 'EventBridge Scheduler group of delayed jobs',
      });
    }
  }

  /** Job types added so far, by name. */
  get jobTypes(): ReadonlyMap<string, JobTypeResources> {
    return this.types;
  }

  /**
   * Deploys a job type: its ready queue and DLQ, its worker Lambda fed by the queue, the API
   * route to it, and Scheduler's permission to deliver to it. Options are checked first, with
   * errors naming the type and the option; the worker's whole environment is checked against
   * Lambda's 4 KB when it is built. Returns the type's handle: grant to its `worker`.
   *
   * @example
   * const reports = platform.addJobType({
   *   spec: reportJob,
   *   entry: 'jobs/report.ts',
   *   memorySize: 1024,
   *   environment: { REPORTS_BUCKET: bucket.bucketName, SMTP_SECRET_ARN: secret.secretArn },
   * });
   * bucket.grantRead(reports.worker);
   * secret.grantRead(reports.worker);
   */
  addJobType(options: JobTypeOptions): JobTypeResources {
    const resolved = resolveJobTypeOptions(options);
    const { type } = resolved.spec;
    if (this.types.has(type)) throw new Error(`job type "${type}" was added to this JobPlatform already`);
    const id = pascalCase(type);
    const clash = [...this.types.keys()].find((other) => pascalCase(other) === id);
    if (clash) throw new Error(`job type "${type}" and "${clash}" map to the same construct id "${id}"`);

    // Each type in a nested stack of its own: 13 resources there and one here, so an app holds
    // hundreds of types within CloudFormation's 500 resources per stack, and adding or removing a
    // type never moves another type's resources (its named queues) between stacks.
    const group = new NestedStack(this, `Type${id}`, { description: `Orrery job type "${type}"` });
    const timeoutSeconds = lambdaTimeoutSeconds(resolved.spec.timeoutMs);
    const queues = new JobQueue(group, 'Queues', {
      workerTimeoutSeconds: timeoutSeconds,
      batchingWindowSeconds: resolved.maxBatchingWindowSeconds ?? 0,
      maxReceiveCount: resolved.maxReceiveCount,
      names: this.queueNaming.names(type),
    });
    const worker = new JobWorker(group, 'Worker', {
      type,
      entry: resolved.entry,
      timeoutSeconds,
      queues,
      jobTable: this.jobTable,
      scheduler: this.scheduler,
      naming: this.queueNaming,
      environment: this.environment,
      concurrency: resolved.concurrency,
      batchSize: resolved.batchSize,
      ...(resolved.maxBatchingWindowSeconds === undefined
        ? {}
        : { maxBatchingWindowSeconds: resolved.maxBatchingWindowSeconds }),
      memorySize: resolved.memorySize,
      userEnvironment: resolved.environment,
      logGroupRetention: this.logRetention,
    });
    this.payloads.grantWorker(worker.handler);
    this.api.addRoute(type);
    const watched = { type, queue: queues.queue, deadLetterQueue: queues.deadLetterQueue, worker: worker.handler };
    this.dashboard.addJobType({ ...watched, alarms: this.alarms.addJobType({ ...watched, scope: group }) });
    this.supervisor.addRoute(type);

    const resources: JobTypeResources = { type, queues, worker };
    this.types.set(type, resources);
    return resources;
  }

  /**
   * Lets `grantee` enqueue jobs: `POST /jobs`, batches and flows, of the given types (every type
   * in a batch or a flow must be granted). Nothing else: no read, no cancel, no signal. This
   * is least privilege: before grants existed, `grantEnqueue(role)` let a caller do everything;
   * give a caller that needs more {@link grantRead}, {@link grantControl} or {@link grantAdmin}.
   *
   * Like every `grant*` method, it also grants `lambda:InvokeFunctionUrl` on the API (IAM's outer
   * layer), and records the grant for the API's inner check, matched by the caller's IAM identity
   * (a role's or a user's account and name). `grantee` must be an IAM role, created or imported
   * with `Role.fromRoleArn`, an IAM user, an account (its root user), or a construct whose
   * `grantPrincipal` is one (a function, a job type's `worker`); anything else fails at once.
   *
   * @example
   * platform.grantEnqueue(billingRole, { types: ['send-invoice'] });
   * platform.grantEnqueue(backendFunction); // every type, nothing else
   */
  grantEnqueue(grantee: IGrantable, options: TypeScopedGrantOptions = {}): IamGrant {
    return this.grant(grantee, { action: 'enqueue', ...types(options) });
  }

  /**
   * Lets `grantee` send signals to jobs of the given types (`POST /jobs/{id}/signals/{name}`),
   * which resume workflows waiting for them. See {@link grantEnqueue} for what every grant adds.
   *
   * @example
   * platform.grantSignal(paymentsWebhookRole, { types: ['fulfil-order'] });
   */
  grantSignal(grantee: IGrantable, options: TypeScopedGrantOptions = {}): IamGrant {
    return this.grant(grantee, { action: 'signal', ...types(options) });
  }

  /**
   * Lets `grantee` cancel, retry, rerun and bulk-act on jobs of the given types, or only the
   * `actions` named. See {@link grantEnqueue} for what every grant adds.
   *
   * @example
   * platform.grantControl(supportRole, { types: ['send-email'], actions: ['retry', 'cancel'] });
   */
  grantControl(grantee: IGrantable, options: ControlGrantOptions = {}): IamGrant {
    return this.grant(grantee, {
      action: 'control',
      ...types(options),
      ...(options.actions !== undefined ? { actions: options.actions } : {}),
    });
  }

  /**
   * Lets `grantee` operate the platform: peek at and redrive dead-letter queues, create, pause and
   * delete recurring schedules, and set limits. Not scoped by job type. See {@link grantEnqueue}
   * for what every grant adds.
   *
   * @example
   * platform.grantOperate(onCallRole);
   */
  grantOperate(grantee: IGrantable): IamGrant {
    return this.grant(grantee, { action: 'operate' });
  }

  /**
   * Lets `grantee` read jobs of the given types, with their payloads and results: every `GET`
   * (the dashboard and `orrery` CLI's read-only views). See {@link grantEnqueue} for what every
   * grant adds.
   *
   * @example
   * platform.grantRead(analyticsRole, { types: ['reindex'] });
   */
  grantRead(grantee: IGrantable, options: TypeScopedGrantOptions = {}): IamGrant {
    return this.grant(grantee, { action: 'read', ...types(options) });
  }

  /**
   * Lets `grantee` do everything, on every job type: what `grantEnqueue` allowed before grants
   * existed. For the team that runs the platform (its dashboard and CLI), not for services. See
   * {@link grantEnqueue} for what every grant adds.
   *
   * @example
   * platform.grantAdmin(Role.fromRoleArn(this, 'Platform team', 'arn:aws:iam::123456789012:role/platform-team'));
   */
  grantAdmin(grantee: IGrantable): IamGrant {
    return this.grant(grantee, { action: 'admin' });
  }

  /** Records the grant for the API (checking the grantee first), then grants the invoke permission. */
  private grant(grantee: IGrantable, grant: AccessGrant): IamGrant {
    this.grants.add(grantee, grant);
    return this.api.grantInvoke(grantee);
  }
}

function types(options: TypeScopedGrantOptions): { types?: readonly string[] } {
  return options.types !== undefined ? { types: options.types } : {};
}

/** Queue-name prefixes taken in each stack: two platforms with one prefix would name the same queues. */
const PREFIXES = new WeakMap<Stack, Set<string>>();

function claimPrefix(scope: Construct, prefix: string): void {
  const stack = Stack.of(scope);
  const taken = PREFIXES.get(stack) ?? new Set<string>();
  if (taken.has(prefix)) {
    throw new Error(
      `JobPlatform: queue-name prefix "${prefix}" is used by another JobPlatform of stack ${stack.stackName}: give each its own queueNamePrefix`,
    );
  }
  taken.add(prefix);
  PREFIXES.set(stack, taken);
}
