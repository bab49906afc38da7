import { CfnOutput, type Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type { Grant, IGrantable } from 'aws-cdk-lib/aws-iam';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { ENV } from '../../shared/config';
import { lambdaTimeoutSeconds } from '../../shared/core/queue-settings';
import type { LogLevel } from '../../shared/logger';
import { EnqueueApi } from './enqueue-api';
import { JobQueue } from './job-queue';
import { JobTable } from './job-table';
import { type JobTypeOptions, pascalCase, resolveJobTypeOptions } from './job-type-options';
import { JobWorker } from './job-worker';
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
   * `Queue<Type>Url` / `Dlq<Type>Url`. Output ids are stack-wide, so one platform per stack.
   * @default true
   */
  readonly outputs?: boolean;
}

/** What {@link JobPlatform.addJobType} created for one job type. */
export interface JobTypeResources {
  readonly type: string;
  readonly queues: JobQueue;
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
 * platform.grantEnqueue(backendRole);
 */
export class JobPlatform extends Construct {
  readonly jobTable: JobTable;
  readonly scheduler: SchedulerAccess;
  readonly api: EnqueueApi;
  /** Repairs lost work and fires missed schedule fires, every minute. */
  readonly supervisor: Supervisor;
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
    this.logRetention = props.logRetention ?? RetentionDays.ONE_MONTH;
    this.outputs = props.outputs ?? true;

    this.jobTable = new JobTable(this, 'Jobs', {
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
      deletionProtection: props.deletionProtection,
    });
    this.scheduler = new SchedulerAccess(this, 'Scheduler', { scheduleGroupName: props.scheduleGroupName });
    this.environment = {
      [ENV.table]: this.jobTable.table.tableName,
      [ENV.scheduleGroup]: this.scheduler.group.scheduleGroupName,
      [ENV.schedulerRoleArn]: this.scheduler.role.roleArn,
      [ENV.retentionDays]: String(retentionDays),
      [ENV.logLevel]: props.logLevel ?? 'info',
    };
    this.api = new EnqueueApi(this, 'Api', {
      jobTable: this.jobTable,
      scheduler: this.scheduler,
      environment: this.environment,
      entry: props.apiEntry,
      memorySize: apiMemoryMb,
      timeout: props.apiTimeout,
      logGroupRetention: this.logRetention,
    });
    this.supervisor = new Supervisor(this, 'Supervisor', {
      jobTable: this.jobTable,
      scheduler: this.scheduler,
      environment: this.environment,
      logGroupRetention: this.logRetention,
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
   * errors naming the type and the option.
   */
  addJobType(options: JobTypeOptions): JobTypeResources {
    const resolved = resolveJobTypeOptions(options);
    const { type } = resolved.spec;
    if (this.types.has(type)) throw new Error(`job type "${type}" was added to this JobPlatform already`);
    const id = pascalCase(type);
    const clash = [...this.types.keys()].find((other) => pascalCase(other) === id);
    if (clash) throw new Error(`job type "${type}" and "${clash}" map to the same construct id "${id}"`);

    const group = new Construct(this, `Type${id}`);
    const timeoutSeconds = lambdaTimeoutSeconds(resolved.spec.timeoutMs);
    const queues = new JobQueue(group, 'Queues', {
      workerTimeoutSeconds: timeoutSeconds,
      maxReceiveCount: resolved.maxReceiveCount,
    });
    const worker = new JobWorker(group, 'Worker', {
      type,
      entry: resolved.entry,
      timeoutSeconds,
      queues,
      jobTable: this.jobTable,
      scheduler: this.scheduler,
      environment: this.environment,
      concurrency: resolved.concurrency,
      batchSize: resolved.batchSize,
      memorySize: resolved.memorySize,
      logGroupRetention: this.logRetention,
    });
    this.api.addRoute(type, queues.queue, queues.deadLetterQueue);
    this.supervisor.addRoute(type, queues.queue);
    this.scheduler.allowSendTo(queues.queue);

    if (this.outputs) {
      const stack = Stack.of(this);
      new CfnOutput(stack, `Queue${id}Url`, { value: queues.queue.queueUrl, description: `Ready queue of "${type}"` });
      new CfnOutput(stack, `Dlq${id}Url`, {
        value: queues.deadLetterQueue.queueUrl,
        description: `Dead-letter queue of "${type}"`,
      });
    }
    const resources: JobTypeResources = { type, queues, worker };
    this.types.set(type, resources);
    return resources;
  }

  /** Lets `grantee` call the enqueue API (SigV4 `lambda:InvokeFunctionUrl`). */
  grantEnqueue(grantee: IGrantable): Grant {
    return this.api.grantInvoke(grantee);
  }
}
