/**
 * The platform's metrics: their names, units and dimension, and the port the domain records them
 * through. Every metric has one dimension, the job type (`type`), in the {@link METRICS_NAMESPACE}
 * namespace. The Lambda functions emit them as CloudWatch embedded metric format (EMF) log lines
 * (see shared/aws/powertools-metrics.ts); the alarms and the dashboard (infra/constructs) read them
 * by these names. See docs/observability.md.
 */

/** CloudWatch namespace of every Orrery metric. */
export const METRICS_NAMESPACE = 'Orrery';

/** A CloudWatch namespace of our own: 1–255 of CloudWatch's characters, not starting with `AWS/`. */
export function isMetricsNamespace(name: string): boolean {
  return /^[A-Za-z0-9 .\-_/#:]{1,255}$/.test(name) && !name.startsWith('AWS/');
}

/** The one dimension of every Orrery metric: the job type. */
export const TYPE_DIMENSION = 'type';

/** Metric names, one per thing counted or timed. */
export const METRIC = {
  /** A job was created by the API (`POST /jobs`, `POST /jobs/batch`); a replay of an existing id is not. */
  enqueued: 'JobsEnqueued',
  /** An attempt started (its claim succeeded). */
  started: 'JobsStarted',
  /** An attempt succeeded: the job is done. */
  succeeded: 'JobsSucceeded',
  /** The job failed for good (permanent error, or its last attempt failed). */
  failed: 'JobsFailed',
  /**
   * An attempt's replay diverged from its journal (`NondeterminismError`): the job is `held` for
   * an operator (retry after a fix, rerun from a step, or cancel).
   */
  held: 'JobsHeld',
  /** An attempt failed and another one is scheduled. */
  retried: 'JobsRetried',
  /** An attempt ended to wait (`ctx.sleep`, `ctx.waitForSignal`): the job is `waiting`. */
  suspended: 'JobsSuspended',
  /** A message was given back for its last receive: SQS moves it to the dead-letter queue. */
  deadLettered: 'JobsDeadLettered',
  /** Milliseconds from when the job was due (enqueued, or its delay or retry backoff over) to its attempt's start. */
  queueDelay: 'QueueDelay',
  /** Milliseconds the handler of an attempt ran. */
  runDuration: 'RunDuration',
  /** AWS requests the worker made for the jobs of a delivery (see {@link JobCost}). */
  requests: 'AwsRequests',
  /** DynamoDB write units the worker's writes consumed for the jobs of a delivery. */
  writeUnits: 'WriteUnits',
} as const;

/**
 * The API's access metrics (docs/security.md). Their `type` dimension is the job type the call
 * touched, or {@link NO_TYPE} for a call on no one type (a schedule, a DLQ redrive names its type).
 */
export const ACCESS_METRIC = {
  /** A call answered 403: its grants did not allow it. */
  forbidden: 'CallsForbidden',
  /** An operator action was done (cancel, retry, bulk, DLQ redrive, schedule changes): the audit's count. */
  operatorAction: 'OperatorActions',
} as const;

/** The `type` dimension of an access metric that concerns no one job type. */
export const NO_TYPE = '-';

export type MetricName = (typeof METRIC)[keyof typeof METRIC] | (typeof ACCESS_METRIC)[keyof typeof ACCESS_METRIC];

/** CloudWatch unit of each metric. */
export const METRIC_UNITS: Readonly<Record<MetricName, 'Count' | 'Milliseconds'>> = {
  JobsEnqueued: 'Count',
  JobsStarted: 'Count',
  JobsSuspended: 'Count',
  JobsSucceeded: 'Count',
  JobsFailed: 'Count',
  JobsHeld: 'Count',
  JobsRetried: 'Count',
  JobsDeadLettered: 'Count',
  QueueDelay: 'Milliseconds',
  RunDuration: 'Milliseconds',
  AwsRequests: 'Count',
  WriteUnits: 'Count',
  CallsForbidden: 'Count',
  OperatorActions: 'Count',
};

/**
 * Where the domain records metrics. Recording is synchronous and never throws; the Lambda entry
 * point flushes what was recorded once per invocation.
 *
 * @example
 * metrics.add(METRIC.succeeded, 'send-email');
 * metrics.add(METRIC.runDuration, 'send-email', 412);
 */
export interface Metrics {
  /** Records `value` (default 1) for metric `name` of job type `type`. */
  add(name: MetricName, type: string, value?: number): void;
}

/** Records nothing: the default where no metrics are wanted (tests, tools). */
export const noMetrics: Metrics = { add: () => {} };

/**
 * What the platform's own AWS requests for a job cost: its AWS requests (HTTP requests, SDK
 * retries included) and the DynamoDB write units its writes consumed. The handler's own calls
 * are not in it.
 */
export interface JobCost {
  requests: number;
  writeUnits: number;
}

export const NO_COST: Readonly<JobCost> = { requests: 0, writeUnits: 0 };

/** `a + b`, field by field. */
export function addCost(a: JobCost, b: JobCost): JobCost {
  return { requests: a.requests + b.requests, writeUnits: a.writeUnits + b.writeUnits };
}

/** Where an adapter reports what one of its AWS requests cost (see shared/lambda/cost-meter.ts). */
export interface CostRecorder {
  record(cost: JobCost): void;
}
