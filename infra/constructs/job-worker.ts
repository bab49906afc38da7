import { Duration } from 'aws-cdk-lib';
import { type IGrantable, type IPrincipal, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { ENV } from '../../shared/config';
import { acknowledge, resourceFinding } from './acknowledge';
import type { JobQueue } from './job-queue';
import type { JobTable } from './job-table';
import { OrreryFunction } from './orrery-function';
import type { QueueNaming } from './queue-naming';
import type { SchedulerAccess } from './scheduler-access';

/** Item actions a worker needs to claim, heartbeat and finish its jobs. No queries, no deletes. */
// BatchGetItem: a job's error items (docs/data-model.md, "Error items")
const WORKER_TABLE_ACTIONS = ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'];

export interface JobWorkerProps {
  /** The job type this worker runs. */
  readonly type: string;
  /**
   * Handler file, absolute or relative to the repository root (from the installed package: to
   * the working directory). Must export `handler`.
   */
  readonly entry: string;
  /** Lambda timeout in seconds (`lambdaTimeoutSeconds(spec.timeoutMs)`). */
  readonly timeoutSeconds: number;
  readonly queues: JobQueue;
  readonly jobTable: JobTable;
  readonly scheduler: SchedulerAccess;
  /** How the platform names its queues: a worker sends to any ready queue (the children it releases, the waiting jobs it hands a slot to). */
  readonly naming: QueueNaming;
  /** Variables every Orrery function gets (table, schedule group, role, retention, log level). */
  readonly environment: Record<string, string>;
  /**
   * The job type's own variables (`addJobType({ environment })`), added after Orrery's.
   * @default none
   */
  readonly userEnvironment?: Readonly<Record<string, string>>;
  /** Event source mapping `MaximumConcurrency` (2–1000). */
  readonly concurrency: number;
  /** Messages per invocation (1–10; up to 10,000 with a batching window). */
  readonly batchSize: number;
  /**
   * Event source mapping `MaximumBatchingWindowInSeconds` (0–300): how long Lambda gathers
   * messages before it invokes the worker (a batch type's `batch.maxWaitSeconds`).
   * @default none (Lambda's 0)
   */
  readonly maxBatchingWindowSeconds?: number;
  /** @default 512 */
  readonly memorySize?: number;
  /** @default RetentionDays.ONE_MONTH */
  readonly logGroupRetention?: RetentionDays;
}

/**
 * The Lambda that runs one job type, fed by its ready queue through an SQS event source mapping
 * with partial batch responses (`ReportBatchItemFailures`) and a concurrency cap. Its role may
 * get, put and update job items (nothing else in DynamoDB), consume only its own queue, send to
 * the platform's ready queues (children it releases, a freed slot's next holder), and
 * create schedules in the platform's group for retries longer than SQS can delay.
 * Use {@link JobPlatform.addJobType} rather than creating workers directly.
 *
 * A worker is grantable: pass it to a resource's `grant*` method to give this type's worker, and
 * no other function, access (`bucket.grantRead(worker)`).
 *
 * @example
 * const reports = platform.addJobType({ spec: reportJob, entry: 'jobs/report.ts' });
 * bucket.grantRead(reports.worker);
 * secret.grantRead(reports.worker);
 */
export class JobWorker extends Construct implements IGrantable {
  /** The worker Lambda: its metrics, `addEnvironment` (not size-checked), its `executionRole`. */
  readonly handler: OrreryFunction;
  /** The worker's execution role, for `grant*` methods. */
  readonly grantPrincipal: IPrincipal;

  constructor(scope: Construct, id: string, props: JobWorkerProps) {
    super(scope, id);
    const { queue } = props.queues;
    this.handler = new OrreryFunction(this, 'Handler', {
      entry: props.entry,
      description: `Orrery worker for job type "${props.type}"`,
      memorySize: props.memorySize ?? 512,
      timeout: Duration.seconds(props.timeoutSeconds),
      logGroupRetention: props.logGroupRetention,
      // the DLQ's receive count, so that the worker counts the messages it dead-letters
      environment: {
        ...props.environment,
        [ENV.maxReceiveCount]: String(props.queues.maxReceiveCount),
        ...props.userEnvironment,
      },
    });
    this.grantPrincipal = this.handler.grantPrincipal;
    this.handler.addEventSource(
      new SqsEventSource(queue, {
        batchSize: props.batchSize,
        ...(props.maxBatchingWindowSeconds === undefined
          ? {}
          : { maxBatchingWindow: Duration.seconds(props.maxBatchingWindowSeconds) }),
        maxConcurrency: props.concurrency,
        reportBatchItemFailures: true,
      }),
    );
    this.handler.addToRolePolicy(
      new PolicyStatement({ actions: WORKER_TABLE_ACTIONS, resources: [props.jobTable.table.tableArn] }),
    );
    // A resumed workflow loads its journal with one Query (docs/data-model.md, "Journal items"):
    // only journal partitions (`job#<id>#<incarnation>#journal`), no index. The deployed run's
    // IAM proof evaluates that Query with its partition key (test/deployed/workflow-resume.test.ts).
    // A slot's ranked line (a type with priorities) is read by its head, one Query of `flowq#…`,
    // and an admission deletes the entry it admits. Any worker may admit: singleton scopes are
    // shared between types. A `ctx.waitForEvent` looks for an event sent under its match key
    // (`evmatch#…`, shared/core/event-waits.ts) after registering there (a PutItem).
    this.handler.addToRolePolicy(
      new PolicyStatement({
        actions: ['dynamodb:Query'],
        resources: [props.jobTable.table.tableArn],
        conditions: {
          'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['job#*#journal', 'flowq#*', 'evmatch#*'] },
        },
      }),
    );
    this.handler.addToRolePolicy(
      new PolicyStatement({
        actions: ['dynamodb:DeleteItem'],
        resources: [props.jobTable.table.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['flowq#*'] } },
      }),
    );
    props.scheduler.grantSchedules(this.handler.executionRole, 'create');
    // A finished job's children and a freed slot's next holder may be of any type.
    this.handler.addToRolePolicy(
      new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [props.naming.readyQueueArns] }),
    );
    acknowledge(
      this.handler.executionRole,
      `AwsSolutions-IAM5[${resourceFinding(this, props.naming.readyQueueArns)}]`,
      "The platform's ready queues, named <prefix>_ready_<type>: a worker sends the children it releases and " +
        'the waiting jobs it hands a slot to, of any type; the pattern matches exactly those queues.',
    );

    acknowledge(
      this.handler,
      'Serverless-LambdaDLQ',
      'The SQS event source mapping invokes this worker synchronously, so a Lambda DeadLetterConfig ' +
        '(async invocations only) would never be used. A failed message returns to the ready queue and ' +
        `after maxReceiveCount receives moves to the "${props.type}" dead-letter queue.`,
    );
    acknowledge(
      this.handler,
      'Serverless-LambdaEventSourceMappingDestination',
      'Lambda supports no OnFailure destination for SQS event source mappings (only for Kinesis, DynamoDB Streams and ' +
        `Kafka). Failed "${props.type}" messages are kept by the ready queue's redrive policy, which ` +
        'moves them to the dead-letter queue after maxReceiveCount receives.',
    );
  }
}
