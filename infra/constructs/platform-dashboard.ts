import { Duration, Lazy } from 'aws-cdk-lib';
import {
  type Alarm,
  AlarmStatusWidget,
  Dashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  TextWidget,
} from 'aws-cdk-lib/aws-cloudwatch';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ACCESS_METRIC, METRIC, TYPE_DIMENSION } from '../../shared/core/metrics';
import {
  DEFAULT_METRICS_PERIOD,
  failureRate,
  type JobMetricsScope,
  jobMetric,
  TIMING_STATS,
  tableThrottles,
} from './job-metrics';

export interface PlatformDashboardProps {
  readonly table: Table;
  readonly api: IFunction;
  readonly supervisor: IFunction;
  /** CloudWatch namespace of the job metrics (`ORRERY_METRICS_NAMESPACE`). */
  readonly namespace: string;
  /**
   * The dashboard's name.
   * @default a name CloudFormation generates
   */
  readonly dashboardName?: string;
  /**
   * Period of the graphs.
   * @default Duration.minutes(5)
   */
  readonly period?: Duration;
  /**
   * Platform alarms to show the state of in the first row.
   * @default none
   */
  readonly alarms?: readonly Alarm[];
  /**
   * Job types that get rows of their own (8 widgets each), in the order they are added. A
   * dashboard holds 500 widgets, and its body counts toward the stack template's 1 MB; the
   * types past this number are named in a note at the end, and the "every type" graphs of the
   * platform row (CloudWatch SEARCH over the job metrics' `type` dimension) show them all.
   * @default 40
   */
  readonly maxTypeRows?: number;
}

/** What {@link PlatformDashboard.addJobType} shows of a job type. */
export interface JobTypeDashboardTargets {
  readonly type: string;
  readonly queue: IQueue;
  readonly deadLetterQueue: IQueue;
  readonly worker: IFunction;
  /** The type's alarms, shown beside its graphs. @default none */
  readonly alarms?: readonly Alarm[];
}

const WIDTH = 24;

/**
 * A CloudWatch dashboard of the platform: a row for the platform (API and supervisor
 * invocations, errors and throttles, the API's forbidden calls and operator actions, table
 * throttles, the platform alarms), then a row per job type: jobs enqueued, started, succeeded,
 * failed, retried and dead-lettered; queue delay and run duration (p50, p99); the ready queue and
 * its dead-letter queue; the AWS requests and write units the worker spent; the failure rate; and
 * the type's alarms.
 *
 * @example
 * const dashboard = new PlatformDashboard(this, 'Dashboard', { table, api, supervisor, namespace: 'Orrery' });
 * dashboard.addJobType({ type: 'send-email', queue, deadLetterQueue, worker });
 */
export class PlatformDashboard extends Construct {
  readonly dashboard: Dashboard;
  private readonly scope: JobMetricsScope;
  private readonly maxTypeRows: number;
  /** Types added past `maxTypeRows`: named in the closing note. */
  private readonly withoutRows: string[] = [];
  private rows = 0;

  constructor(scope: Construct, id: string, props: PlatformDashboardProps) {
    super(scope, id);
    this.scope = { namespace: props.namespace, period: props.period ?? DEFAULT_METRICS_PERIOD };
    this.maxTypeRows = props.maxTypeRows ?? 40;
    if (!Number.isInteger(this.maxTypeRows) || this.maxTypeRows < 0 || this.maxTypeRows > 60) {
      throw new Error(`PlatformDashboard: maxTypeRows must be an integer from 0 to 60 (got ${this.maxTypeRows})`);
    }
    const period = this.scope.period;
    this.dashboard = new Dashboard(this, 'Dashboard', {
      ...(props.dashboardName ? { dashboardName: props.dashboardName } : {}),
      defaultInterval: Duration.hours(3),
    });
    this.dashboard.addWidgets(
      new TextWidget({
        markdown: `# Orrery\nJob metrics: namespace \`${props.namespace}\`, dimension \`type\` (EMF lines of the functions). See docs/observability.md.`,
        width: WIDTH,
        height: 2,
      }),
    );
    const fn = (f: IFunction, name: string): IMetric[] => [
      f.metricInvocations({ period, label: `${name} invocations` }),
      f.metricErrors({ period, label: `${name} errors` }),
      f.metricThrottles({ period, label: `${name} throttles` }),
    ];
    // Every type at once, whatever their number: one SEARCH expression each, constant in size.
    const search = (metric: string) =>
      `SEARCH('{${props.namespace},${TYPE_DIMENSION}} MetricName="${metric}"', 'Sum', ${period.toSeconds()})`;
    const everyType = (metric: string, label: string) =>
      new MathExpression({ expression: search(metric), label, period });
    // The access metrics carry the type a call touched (`-` for none): summed over all of them.
    const allTypes = (metric: string, label: string) =>
      new MathExpression({ expression: `SUM(${search(metric)})`, label, period });
    const row = [
      graph('API', fn(props.api, 'API'), 6),
      graph(
        'API access',
        [
          allTypes(ACCESS_METRIC.forbidden, 'calls forbidden'),
          allTypes(ACCESS_METRIC.operatorAction, 'operator actions'),
        ],
        6,
      ),
      graph('Supervisor', fn(props.supervisor, 'supervisor'), 6),
      graph('Job table: throttled requests', [tableThrottles(props.table, period)], 6),
    ];
    this.dashboard.addWidgets(...row);
    this.dashboard.addWidgets(
      graph('Every type: jobs succeeded', [everyType(METRIC.succeeded, 'succeeded')], 8),
      graph('Every type: jobs failed', [everyType(METRIC.failed, 'failed')], 8),
      graph('Every type: jobs dead-lettered', [everyType(METRIC.deadLettered, 'dead-lettered')], 8),
    );
    this.dashboard.addWidgets(
      new TextWidget({
        markdown: Lazy.string({
          produce: () =>
            this.withoutRows.length === 0
              ? 'Each job type has its rows below.'
              : `The first ${this.maxTypeRows} job types have rows below; the "every type" graphs above show all of them. ` +
                `Without rows of their own (${this.withoutRows.length}): ${this.withoutRows.join(', ')}.`,
        }),
        width: WIDTH,
        height: 1,
      }),
    );
    if (props.alarms && props.alarms.length > 0) {
      this.dashboard.addWidgets(
        new AlarmStatusWidget({ title: 'Platform alarms', alarms: [...props.alarms], width: WIDTH, height: 2 }),
      );
    }
  }

  /** Adds a job type's rows (or, past `maxTypeRows`, names it in the note). */
  addJobType(targets: JobTypeDashboardTargets): void {
    const { type, queue, deadLetterQueue, worker } = targets;
    if (this.rows >= this.maxTypeRows) {
      this.withoutRows.push(type);
      return;
    }
    this.rows += 1;
    const m = (name: Parameters<typeof jobMetric>[1], statistic?: string, label?: string) =>
      jobMetric(this.scope, name, type, statistic, label);
    const period = this.scope.period;
    this.dashboard.addWidgets(
      new TextWidget({ markdown: `## ${type}`, width: WIDTH, height: 1 }),
      graph(
        'Jobs',
        [
          m(METRIC.enqueued, 'Sum', 'enqueued'),
          m(METRIC.started, 'Sum', 'started'),
          m(METRIC.succeeded, 'Sum', 'succeeded'),
          m(METRIC.failed, 'Sum', 'failed'),
          // held for an operator: a replay that diverged from its journal
          m(METRIC.held, 'Sum', 'held'),
          m(METRIC.retried, 'Sum', 'retried'),
          m(METRIC.suspended, 'Sum', 'suspended'),
          m(METRIC.deadLettered, 'Sum', 'dead-lettered'),
        ],
        8,
      ),
      graph(
        'Queue delay and run duration (ms)',
        TIMING_STATS.flatMap((stat) => [
          m(METRIC.queueDelay, stat, `queue delay ${stat}`),
          m(METRIC.runDuration, stat, `run duration ${stat}`),
        ]),
        8,
      ),
      graph('Failure rate', [failureRate(this.scope, type)], 8),
    );
    this.dashboard.addWidgets(
      graph(
        'Queues',
        [
          queue.metricApproximateNumberOfMessagesVisible({ period, statistic: 'Maximum', label: 'ready: visible' }),
          queue.metricApproximateAgeOfOldestMessage({ period, statistic: 'Maximum', label: 'ready: oldest (s)' }),
          deadLetterQueue.metricApproximateNumberOfMessagesVisible({
            period,
            statistic: 'Maximum',
            label: 'DLQ: visible',
          }),
        ],
        8,
      ),
      graph(
        'Cost: AWS requests and write units',
        [m(METRIC.requests, 'Sum', 'requests'), m(METRIC.writeUnits, 'Sum', 'write units')],
        8,
      ),
      graph(
        'Worker',
        [
          worker.metricInvocations({ period, label: 'invocations' }),
          worker.metricErrors({ period, label: 'errors' }),
          worker.metricThrottles({ period, label: 'throttles' }),
        ],
        8,
      ),
    );
    if (targets.alarms && targets.alarms.length > 0) {
      this.dashboard.addWidgets(
        new AlarmStatusWidget({ title: `${type} alarms`, alarms: [...targets.alarms], width: WIDTH, height: 2 }),
      );
    }
  }
}

function graph(title: string, metrics: IMetric[], width: number): GraphWidget {
  return new GraphWidget({ title, left: metrics, width, height: 6 });
}
