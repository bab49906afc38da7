import { Duration, Lazy } from 'aws-cdk-lib';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { ENV, typesDigest } from '../../shared/config';
import { JOB_TABLE } from '../../shared/core/table';
import { platformEntry } from '../paths';
import { acknowledge, resourceFinding } from './acknowledge';
import type { JobTable } from './job-table';
import { OrreryFunction } from './orrery-function';
import type { QueueNaming } from './queue-naming';
import type { SchedulerAccess } from './scheduler-access';

/** Item actions a supervisor pass needs: read items, create runs and its checkpoint, move due times. */
// BatchGetItem: a job's error items (docs/data-model.md, "Error items")
const SUPERVISOR_TABLE_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:BatchGetItem',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
];

/** The due index, which the supervisor queries by minute bucket. */
export const DUE_INDEX_NAME = JOB_TABLE.indexes.find((index) => index.partitionKey === 'dueBucket')?.name ?? 'byDue';
/** `byType`, which the supervisor queries by creation time (the creation sweep) and for the schedules' listing. */
export const SWEEP_INDEX_NAME = JOB_TABLE.indexes.find((index) => index.partitionKey === 'gsi1pk')?.name ?? 'byType';

export interface SupervisorProps {
  readonly jobTable: JobTable;
  /**
   * The schedule group of one-time job schedules: the supervisor may delete a schedule of it that
   * never fired, once it re-sent the job itself. Without it, such schedules stay where Scheduler
   * does not fire.
   */
  readonly scheduler?: SchedulerAccess;
  /** How the platform names its queues: the supervisor lists its ready queues and re-sends to them. */
  readonly naming: QueueNaming;
  /** Variables every Orrery function gets (table, schedule group, role, retention, log level). */
  readonly environment: Record<string, string>;
  /**
   * How often a pass runs.
   * @default Schedule.rate(Duration.minutes(1))
   */
  readonly schedule?: Schedule;
  /**
   * Handler file, absolute or relative to the repository root.
   * @default Orrery's own (`functions/supervisor.ts`; in the package, `dist/functions/supervisor.js`)
   */
  readonly entry?: string;
  /** @default RetentionDays.ONE_MONTH */
  readonly logGroupRetention?: RetentionDays;
}

/**
 * The supervisor: a Lambda that an EventBridge rule invokes every minute. Each invocation reads
 * the sparse `byDue` index from its checkpoint to now, sweeps the jobs created 9–10 minutes ago
 * (`byType`), and repairs lost work (schedules that never fired, sends that never arrived, dead
 * workers' jobs) by sending job messages again, and fires recurring schedules whose EventBridge
 * Scheduler trigger did not.
 *
 * It runs on an EventBridge rule, not on EventBridge Scheduler, so it keeps running when the
 * thing it backs up fails (and on LocalStack, whose Scheduler never fires). Its role may read and
 * write items, query the due index and `byType` only, list queues (to find the deployed types:
 * ListQueues takes no resource-level permission) and send to the platform's ready queues, and
 * delete schedules of the job schedule group (those that never fired). Its environment holds the
 * digest of the types added with {@link addRoute}, which its listing is checked against.
 *
 * @example
 * const supervisor = new Supervisor(this, 'Supervisor', { jobTable, naming, environment });
 * supervisor.addRoute('send-email', emailQueue);
 */
export class Supervisor extends Construct {
  readonly handler: OrreryFunction;
  readonly rule: Rule;
  private readonly types = new Set<string>();

  constructor(scope: Construct, id: string, props: SupervisorProps) {
    super(scope, id);
    const digest = Lazy.string({ produce: () => typesDigest([...this.types]) });
    this.handler = new OrreryFunction(this, 'Handler', {
      entry: props.entry ?? platformEntry('supervisor'),
      description: 'Orrery supervisor: repairs lost jobs and fires missed schedule fires (every minute)',
      memorySize: 512,
      timeout: Duration.seconds(60),
      logGroupRetention: props.logGroupRetention,
      environment: { ...props.environment, [ENV.typesDigest]: digest },
    });
    const table = props.jobTable.table;
    this.handler.addToRolePolicy(
      new PolicyStatement({ actions: SUPERVISOR_TABLE_ACTIONS, resources: [table.tableArn] }),
    );
    this.handler.addToRolePolicy(
      new PolicyStatement({
        actions: ['dynamodb:Query'],
        resources: [`${table.tableArn}/index/${DUE_INDEX_NAME}`, `${table.tableArn}/index/${SWEEP_INDEX_NAME}`],
      }),
    );

    props.scheduler?.grantSchedules(this.handler.executionRole, 'delete');
    this.handler.addToRolePolicy(
      new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [props.naming.readyQueueArns] }),
    );
    this.handler.addToRolePolicy(new PolicyStatement({ actions: ['sqs:ListQueues'], resources: ['*'] }));
    acknowledge(
      this.handler.executionRole,
      `AwsSolutions-IAM5[${resourceFinding(this, props.naming.readyQueueArns)}]`,
      "The platform's ready queues, named <prefix>_ready_<type>: the pattern matches exactly them and stays one " +
        'line whatever the number of job types.',
    );
    acknowledge(
      this.handler.executionRole,
      'AwsSolutions-IAM5[Resource::*]',
      'sqs:ListQueues has no resource-level permission (IAM grants it per Region). The supervisor lists the ' +
        "platform's ready queues by name prefix to find the deployed job types, which its environment cannot " +
        "hold within Lambda's 4 KB. The same role's X-Ray statement also needs *.",
    );

    this.rule = new Rule(this, 'Every', {
      description: 'Runs the Orrery supervisor',
      schedule: props.schedule ?? Schedule.rate(Duration.minutes(1)),
      targets: [new LambdaFunction(this.handler, { retryAttempts: 0 })],
    });

    acknowledge(
      this.handler,
      'Serverless-LambdaDLQ',
      'The supervisor is invoked asynchronously by a rule every minute with an empty event. A failed pass leaves ' +
        'its checkpoint where it was, so the next minute reads the same buckets again; a dead-letter queue would ' +
        'only collect empty tick events that nobody needs to replay.',
    );
    acknowledge(
      this.rule,
      'Serverless-EventBusDLQ',
      'This rule only emits a scheduled tick every minute (no event data). A tick that cannot be delivered is ' +
        'replaced by the next one a minute later, and the supervisor is idempotent, so there is nothing to keep ' +
        'in a dead-letter queue.',
    );
  }

  /** Counts `type` among the deployed types (`ORRERY_TYPES_DIGEST`), which the supervisor's listing is checked against. */
  addRoute(type: string): void {
    if (this.types.has(type)) throw new Error(`Supervisor: route for job type "${type}" exists already`);
    this.types.add(type);
  }
}
