import { Duration, Lazy, Stack } from 'aws-cdk-lib';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ENV } from '../../shared/config';
import { JOB_TABLE } from '../../shared/core/table';
import { platformEntry } from '../paths';
import { acknowledge } from './acknowledge';
import type { JobTable } from './job-table';
import { OrreryFunction } from './orrery-function';
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
 * write items, query the due index and `byType` only, send to the ready queues added with {@link addRoute},
 * and delete schedules of the job schedule group (those that never fired).
 *
 * @example
 * const supervisor = new Supervisor(this, 'Supervisor', { jobTable, environment });
 * supervisor.addRoute('send-email', emailQueue);
 */
export class Supervisor extends Construct {
  readonly handler: OrreryFunction;
  readonly rule: Rule;
  private readonly routes = new Map<string, IQueue>();
  private readonly sendStatement = new PolicyStatement({ actions: ['sqs:SendMessage'] });

  constructor(scope: Construct, id: string, props: SupervisorProps) {
    super(scope, id);
    const routes = Lazy.string({ produce: () => Stack.of(this).toJsonString(this.routeConfig()) });
    this.handler = new OrreryFunction(this, 'Handler', {
      entry: props.entry ?? platformEntry('supervisor'),
      description: 'Orrery supervisor: repairs lost jobs and fires missed schedule fires (every minute)',
      memorySize: 512,
      timeout: Duration.seconds(60),
      logGroupRetention: props.logGroupRetention,
      environment: { ...props.environment, [ENV.routes]: routes },
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

  /** Lets the supervisor send job messages to `queue` (called for every job type). */
  addRoute(type: string, queue: IQueue): void {
    if (this.routes.has(type)) throw new Error(`Supervisor: route for job type "${type}" exists already`);
    this.routes.set(type, queue);
    const first = this.sendStatement.resources.length === 0;
    this.sendStatement.addResources(queue.queueArn);
    if (first) this.handler.addToRolePolicy(this.sendStatement);
  }

  private routeConfig(): Record<string, { queueUrl: string; queueArn: string }> {
    const config: Record<string, { queueUrl: string; queueArn: string }> = {};
    for (const [type, queue] of this.routes) config[type] = { queueUrl: queue.queueUrl, queueArn: queue.queueArn };
    return config;
  }
}
