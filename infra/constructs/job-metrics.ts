import { Duration } from 'aws-cdk-lib';
import { type IMetric, MathExpression, Metric } from 'aws-cdk-lib/aws-cloudwatch';
import { Operation, type Table } from 'aws-cdk-lib/aws-dynamodb';
import { METRIC, type MetricName, TYPE_DIMENSION } from '../../shared/core/metrics';

/** Where the job metrics are read: the namespace the functions write them to, and the period. */
export interface JobMetricsScope {
  /** CloudWatch namespace (`ORRERY_METRICS_NAMESPACE` of the functions). */
  readonly namespace: string;
  /** Aggregation period. */
  readonly period: Duration;
}

/** One of the EMF job metrics (shared/core/metrics.ts) of one job type. */
export function jobMetric(
  scope: JobMetricsScope,
  name: MetricName,
  type: string,
  statistic: string = 'Sum',
  label?: string,
): Metric {
  return new Metric({
    namespace: scope.namespace,
    metricName: name,
    dimensionsMap: { [TYPE_DIMENSION]: type },
    statistic,
    period: scope.period,
    ...(label ? { label } : {}),
  });
}

/**
 * `failed / (succeeded + failed)` of one job type per period, 0 when no job ended (a period
 * without either metric has no data: the alarm treats it as not breaching).
 */
export function failureRate(scope: JobMetricsScope, type: string): MathExpression {
  return new MathExpression({
    expression: 'IF((FILL(s, 0) + FILL(f, 0)) > 0, FILL(f, 0) / (FILL(s, 0) + FILL(f, 0)), 0)',
    usingMetrics: {
      s: jobMetric(scope, METRIC.succeeded, type),
      f: jobMetric(scope, METRIC.failed, type),
    },
    label: `${type} failure rate`,
    period: scope.period,
  });
}

/** Percentile statistics the dashboard shows for the timings. */
export const TIMING_STATS = ['p50', 'p99'] as const;

/** Period of the alarms on job metrics and of the dashboard's graphs, unless given. */
export const DEFAULT_METRICS_PERIOD = Duration.minutes(5);

/** The DynamoDB operations Orrery's functions call. */
const TABLE_OPERATIONS = [
  Operation.GET_ITEM,
  Operation.BATCH_GET_ITEM,
  Operation.PUT_ITEM,
  Operation.UPDATE_ITEM,
  Operation.QUERY,
  Operation.TRANSACT_WRITE_ITEMS,
];

/** The job table's `ThrottledRequests`, summed over the operations Orrery uses (one metric each). */
export function tableThrottles(table: Table, period: Duration): IMetric {
  return table.metricThrottledRequestsForOperations({
    operations: TABLE_OPERATIONS,
    period,
    statistic: 'Sum',
    label: 'job table throttled requests',
  });
}
