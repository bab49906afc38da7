import { Duration } from 'aws-cdk-lib';
import {
  Alarm,
  ComparisonOperator,
  type IAlarmAction,
  type IMetric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { METRIC } from '../../shared/core/metrics';
import { DEFAULT_METRICS_PERIOD, failureRate, type JobMetricsScope, jobMetric, tableThrottles } from './job-metrics';
import { pascalCase } from './job-type-options';

export interface PlatformAlarmsProps {
  /** The job table, for its throttled requests. */
  readonly table: Table;
  /** The enqueue API function, for its throttles. */
  readonly api: IFunction;
  /** The supervisor function, for its errors and throttles. */
  readonly supervisor: IFunction;
  /** CloudWatch namespace of the job metrics (`ORRERY_METRICS_NAMESPACE`). */
  readonly namespace: string;
  /**
   * Where every alarm sends its ALARM and OK notifications.
   * @default no action: the alarms only change state
   */
  readonly alarmTopic?: ITopic;
  /**
   * A job type's failure rate (`failed / (succeeded + failed)`, 0–1) above which its alarm fires,
   * over one period.
   * @default 0.1
   */
  readonly failureRateThreshold?: number;
  /**
   * Age of the oldest message of a ready queue above which its alarm fires (for a full minute).
   * A message hidden for a retry's backoff counts until it was received three times, so keep this
   * above the longest backoff of your first retries.
   * @default Duration.hours(1)
   */
  readonly oldestMessageAgeThreshold?: Duration;
  /**
   * Period of the failure-rate, error and throttle alarms.
   * @default Duration.minutes(5)
   */
  readonly period?: Duration;
}

/** What {@link PlatformAlarms.addJobType} needs of a job type. */
export interface JobTypeAlarmTargets {
  readonly type: string;
  readonly queue: IQueue;
  readonly deadLetterQueue: IQueue;
  readonly worker: IFunction;
  /**
   * Where the type's alarms are created (its own nested stack, so that the parent stack does not
   * grow by four resources per type).
   * @default this construct
   */
  readonly scope?: Construct;
}

/**
 * The platform's CloudWatch alarms, each sending to `alarmTopic` when given:
 * - per job type: its dead-letter queue is not empty; its failure rate is above the threshold;
 *   its ready queue's oldest message is older than the threshold; its worker is throttled;
 * - for the platform: the supervisor fails (Lambda `Errors`); the API or the supervisor is
 *   throttled; the job table throttles requests (`ThrottledRequests` of the operations Orrery
 *   uses, summed).
 *
 * A period without data is not breaching: the job metrics exist only for periods with jobs.
 * See docs/observability.md.
 *
 * @example
 * const alarms = new PlatformAlarms(this, 'Alarms', { table, api, supervisor, namespace: 'Orrery', alarmTopic });
 * alarms.addJobType({ type: 'send-email', queue, deadLetterQueue, worker });
 */
export class PlatformAlarms extends Construct {
  /** Every alarm, by a name that says what it watches (e.g. `send-email:DeadLetters`). */
  readonly alarms = new Map<string, Alarm>();
  private readonly action?: IAlarmAction;
  private readonly scope: JobMetricsScope;
  private readonly failureRateThreshold: number;
  private readonly oldestMessageAge: Duration;

  constructor(scope: Construct, id: string, props: PlatformAlarmsProps) {
    super(scope, id);
    const failureRateThreshold = props.failureRateThreshold ?? 0.1;
    if (!(failureRateThreshold > 0 && failureRateThreshold < 1)) {
      throw new Error(`PlatformAlarms: failureRateThreshold must be between 0 and 1 (got ${failureRateThreshold})`);
    }
    this.failureRateThreshold = failureRateThreshold;
    this.oldestMessageAge = props.oldestMessageAgeThreshold ?? Duration.hours(1);
    if (this.oldestMessageAge.toSeconds() < 60) {
      throw new Error('PlatformAlarms: oldestMessageAgeThreshold must be at least a minute');
    }
    this.scope = { namespace: props.namespace, period: props.period ?? DEFAULT_METRICS_PERIOD };
    if (props.alarmTopic) this.action = new SnsAction(props.alarmTopic);
    const period = this.scope.period;

    this.add('SupervisorErrors', {
      metric: props.supervisor.metricErrors({ period, statistic: 'Sum' }),
      threshold: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      description:
        'The supervisor failed a pass (Lambda Errors). The next minute retries it, but lost jobs and missed ' +
        'schedule fires are not repaired while it fails.',
    });
    this.add('ApiThrottles', this.throttles(props.api, 'The enqueue API'));
    this.add('SupervisorThrottles', this.throttles(props.supervisor, 'The supervisor'));
    this.add('TableThrottles', {
      metric: tableThrottles(props.table, period),
      threshold: 0,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      description:
        'The job table throttled requests (ThrottledRequests of the operations Orrery uses): a hot partition ' +
        'key, or the table is over its on-demand or account limits. Throttled calls are retried by the SDK, ' +
        'then fail the request or attempt.',
    });
  }

  /** Adds the alarms of one job type; returns them. */
  addJobType(targets: JobTypeAlarmTargets): Alarm[] {
    const { type, queue, deadLetterQueue, worker } = targets;
    const added: Alarm[] = [];
    const add = (name: string, spec: AlarmSpec) => added.push(this.add(`${type}:${name}`, spec, targets.scope));
    add('DeadLetters', {
      metric: deadLetterQueue.metricApproximateNumberOfMessagesVisible({
        period: Duration.minutes(1),
        statistic: 'Maximum',
      }),
      threshold: 0,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      description: `The "${type}" dead-letter queue holds messages: inspect them (GET /dlq/${type}), then redrive or delete.`,
    });
    add('FailureRate', {
      metric: failureRate(this.scope, type),
      threshold: this.failureRateThreshold,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      description:
        `More than ${this.failureRateThreshold * 100} % of the "${type}" jobs that ended in a period failed ` +
        '(JobsFailed / (JobsSucceeded + JobsFailed)).',
    });
    // A held job (its replay diverged from its journal) runs nothing until an operator acts, and
    // counts as no failure: without this alarm, a deploy that holds every run in flight pages nobody.
    add('Held', {
      metric: jobMetric(this.scope, METRIC.held, type),
      threshold: 0,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      description:
        `A "${type}" job is held for an operator: its replay diverged from its journal (code changed under a run ` +
        `in flight). List them (GET /jobs?type=${type}&state=held), then retry after a fix, rerun from a step, or ` +
        'cancel (docs/workflows.md, "Held for an operator").',
    });
    add('OldestMessage', {
      metric: queue.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(1), statistic: 'Maximum' }),
      threshold: this.oldestMessageAge.toSeconds(),
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      description:
        `The oldest message of the "${type}" ready queue is older than ${this.oldestMessageAge.toHumanString()}: ` +
        'its worker does not keep up, or cannot run.',
    });
    add('WorkerThrottles', this.throttles(worker, `The "${type}" worker`));
    return added;
  }

  private throttles(fn: IFunction, what: string): AlarmSpec {
    return {
      metric: fn.metricThrottles({ period: this.scope.period, statistic: 'Sum' }),
      threshold: 0,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      description: `${what} was throttled (Lambda Throttles): the account or function concurrency is exhausted.`,
    };
  }

  private add(name: string, spec: AlarmSpec, scope: Construct = this): Alarm {
    // `<type>:<what>` → `<PascalType><what>`: JobPlatform refuses types whose Pascal case collides
    const [type, what] = name.includes(':') ? name.split(':') : ['', name];
    const alarm = new Alarm(scope, scope === this ? `${pascalCase(type ?? '')}${what ?? ''}` : `Alarm${what ?? ''}`, {
      ...spec,
      alarmDescription: spec.description,
      evaluationPeriods: 1,
      datapointsToAlarm: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    if (this.action) {
      alarm.addAlarmAction(this.action);
      alarm.addOkAction(this.action);
    }
    this.alarms.set(name, alarm);
    return alarm;
  }
}

interface AlarmSpec {
  metric: IMetric;
  threshold: number;
  comparisonOperator: ComparisonOperator;
  description: string;
}
