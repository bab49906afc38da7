import { createHash } from 'node:crypto';
import { isMetricsNamespace, METRICS_NAMESPACE } from './core/metrics';
import { isQueueNamePrefix, queueNames } from './core/queue-settings';
import { ConfigError } from './errors';
import type { LogLevel } from './logger';

/**
 * The only place Orrery reads `process.env`. The CDK construct sets these variables on
 * every function, and the local AWS harness sets the same names, so code never branches
 * on where it runs.
 */
export const ENV = {
  /** DynamoDB job table name. */
  table: 'ORRERY_TABLE',
  /**
   * What every queue URL of the deployment starts with: `https://sqs.<region>.<suffix>/<account>/`.
   * Each job type's queues have names derived from {@link ENV.queuePrefix} (`queueNames`), so no
   * variable grows with the number of job types (Lambda allows 4 KB for all of them).
   */
  queueUrlBase: 'ORRERY_QUEUE_URL_BASE',
  /** What every queue ARN of the deployment starts with: `arn:<partition>:sqs:<region>:<account>:`. */
  queueArnBase: 'ORRERY_QUEUE_ARN_BASE',
  /** The deployment's queue-name prefix: a type's ready queue is `<prefix>_ready_<type>`, its DLQ `<prefix>_dlq_<type>`. */
  queuePrefix: 'ORRERY_QUEUE_PREFIX',
  /**
   * The digest of the deployed job types (see {@link typesDigest}): lets the API check its
   * catalog against what was deployed, and the supervisor its listing, without the list itself.
   */
  typesDigest: 'ORRERY_TYPES_DIGEST',
  /** A worker's: receives after which SQS moves its messages to the DLQ (it counts what it dead-letters). */
  maxReceiveCount: 'ORRERY_MAX_RECEIVE_COUNT',
  /** Scheduler group for one-time job schedules. */
  scheduleGroup: 'ORRERY_SCHEDULE_GROUP',
  /** IAM role Scheduler assumes to send to the ready queues. */
  schedulerRoleArn: 'ORRERY_SCHEDULER_ROLE_ARN',
  /** Days a finished job is kept before DynamoDB TTL removes it. */
  retentionDays: 'ORRERY_RETENTION_DAYS',
  /** `debug`, `info` (default), `warn`, `error` or `silent`. */
  logLevel: 'ORRERY_LOG_LEVEL',
  /** `true`: the Powertools Tracer captures the AWS SDK clients (X-Ray subsegments). Default off. */
  tracing: 'ORRERY_TRACING',
  /** CloudWatch namespace of the platform's metrics. @default 'Orrery' */
  metricsNamespace: 'ORRERY_METRICS_NAMESPACE',
  /**
   * The API's: name of the SSM parameter holding the grants (who may do what), written at deploy
   * time and read once per container. One name, whatever the number of grants.
   */
  grantsParameter: 'ORRERY_GRANTS_PARAMETER',
  /**
   * The S3 bucket that keeps values too large for an item (payloads, results, step results,
   * signals: shared/core/blobs.ts). Unset: such values are refused, as before.
   */
  payloadBucket: 'ORRERY_PAYLOAD_BUCKET',
} as const;

/** Where one job type's messages go. */
export interface Route {
  queueUrl: string;
  queueArn: string;
  /** The type's dead-letter queue, which the API peeks and redrives (set for the API). */
  dlqUrl?: string;
  dlqArn?: string;
  /** Receives after which SQS moves a message to the DLQ (set for the worker: it counts what it dead-letters). */
  maxReceiveCount?: number;
}

/** How a deployment names its queues (see `queueNames` in shared/core/queue-settings.ts). */
export interface QueueNaming {
  /** `https://sqs.<region>.<suffix>/<account>/`, or an emulator's equivalent. */
  urlBase: string;
  /** `arn:<partition>:sqs:<region>:<account>:`. */
  arnBase: string;
  /** Letters, digits and `-`, 1–32 characters. */
  prefix: string;
}

/** What the enqueue API needs to know about its deployment. */
export interface PlatformConfig {
  tableName: string;
  /**
   * The job types this function serves, with their queues: the API's catalog, a worker's own
   * type, every deployed type for the supervisor. Another type's queue is found with {@link routeOf}.
   */
  routes: Record<string, Route>;
  /** How the deployment names its queues, for {@link routeOf}. @default only `routes` are known */
  queues?: QueueNaming;
  /** {@link typesDigest} of the deployed types. @default not checked */
  typesDigest?: string;
  /** A worker's: receives after which SQS dead-letters its messages. @default unknown (not counted) */
  maxReceiveCount?: number;
  scheduleGroup: string;
  schedulerRoleArn: string;
  /** @default 30 */
  retentionDays: number;
  /** @default 'info' */
  logLevel: LogLevel;
  /** Capture the AWS SDK clients with the Powertools Tracer. @default false */
  tracing?: boolean;
  /** CloudWatch namespace of the metrics. @default METRICS_NAMESPACE ('Orrery') */
  metricsNamespace?: string;
  /** The API's: SSM parameter holding the grants document. @default none (only the API has one) */
  grantsParameter?: string;
  /** The S3 bucket of offloaded values (shared/core/blobs.ts). @default none: values over the inline limits are refused */
  payloadBucket?: string;
}

type Env = Record<string, string | undefined>;

/**
 * The Lambda function version this code runs as (`AWS_LAMBDA_FUNCTION_VERSION`, which Lambda sets
 * on every function: `$LATEST`, or a published version's number), or undefined outside Lambda.
 * @example
 * lambdaFunctionVersion(); // '$LATEST', '7', or undefined in a test
 */
export function lambdaFunctionVersion(env: Env = process.env): string | undefined {
  const raw = env.AWS_LAMBDA_FUNCTION_VERSION;
  return raw === undefined || raw === '' ? undefined : raw;
}

export function requireEnv(env: Env, name: string): string {
  const value = env[name];
  if (value === undefined || value === '') {
    throw new ConfigError(`environment variable ${name} is not set`);
  }
  return value;
}

function retentionDays(env: Env): number {
  const raw = env[ENV.retentionDays];
  if (raw === undefined || raw === '') return 30;
  const days = Number(raw);
  if (!Number.isInteger(days) || days < 1 || days > 3650) {
    throw new ConfigError(`${ENV.retentionDays} must be an integer from 1 to 3650 (got ${raw})`);
  }
  return days;
}

/** A job type's route under a deployment's queue naming. */
export function namedRoute(queues: QueueNaming, type: string, maxReceiveCount?: number): Route {
  const names = queueNames(queues.prefix, type);
  return {
    queueUrl: `${queues.urlBase}${names.ready}`,
    queueArn: `${queues.arnBase}${names.ready}`,
    dlqUrl: `${queues.urlBase}${names.dlq}`,
    dlqArn: `${queues.arnBase}${names.dlq}`,
    ...(maxReceiveCount !== undefined ? { maxReceiveCount } : {}),
  };
}

/** The routes of `types` under a deployment's queue naming. */
function namedRoutes(queues: QueueNaming, types: readonly string[], maxReceiveCount?: number): Record<string, Route> {
  return Object.fromEntries(types.map((type) => [type, namedRoute(queues, type, maxReceiveCount)]));
}

/**
 * Where jobs of `type` go: this function's own route for it, or one derived from the
 * deployment's queue naming (a worker releasing a child of another type, a singleton shared
 * with another type). Undefined only when neither is known.
 */
export function routeOf(config: Pick<PlatformConfig, 'routes' | 'queues'>, type: string): Route | undefined {
  return config.routes[type] ?? (config.queues ? namedRoute(config.queues, type) : undefined);
}

/**
 * The first 20 hex digits of the SHA-256 of the sorted names: constant in size, so it fits an
 * environment variable whatever the number of types.
 */
export function typesDigest(types: readonly string[]): string {
  const sorted = [...new Set(types)].sort();
  return createHash('sha256').update(sorted.join('\n')).digest('hex').slice(0, 20);
}

function queueNaming(env: Env): QueueNaming {
  const prefix = requireEnv(env, ENV.queuePrefix);
  if (!isQueueNamePrefix(prefix)) {
    throw new ConfigError(`${ENV.queuePrefix} must be 1-32 letters, digits or - (got ${prefix})`);
  }
  const urlBase = requireEnv(env, ENV.queueUrlBase);
  if (!/^https?:\/\/.+\/$/.test(urlBase)) {
    throw new ConfigError(`${ENV.queueUrlBase} must be an http(s) URL ending with / (got ${urlBase})`);
  }
  const arnBase = requireEnv(env, ENV.queueArnBase);
  if (!/^arn:[^:]+:sqs:[^:]*:[^:]*:$/.test(arnBase)) {
    throw new ConfigError(
      `${ENV.queueArnBase} must look like arn:<partition>:sqs:<region>:<account>: (got ${arnBase})`,
    );
  }
  return { urlBase, arnBase, prefix };
}

function maxReceiveCount(env: Env): number | undefined {
  const raw = env[ENV.maxReceiveCount];
  if (raw === undefined || raw === '') return undefined;
  const count = Number(raw);
  if (!Number.isInteger(count) || count < 1 || count > 1000) {
    throw new ConfigError(`${ENV.maxReceiveCount} must be an integer from 1 to 1000 (got ${raw})`);
  }
  return count;
}

const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];

function logLevel(env: Env): LogLevel {
  const raw = env[ENV.logLevel];
  if (raw === undefined || raw === '') return 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(raw)) {
    throw new ConfigError(`${ENV.logLevel} must be one of ${LOG_LEVELS.join(', ')} (got ${raw})`);
  }
  return raw as LogLevel;
}

function tracing(env: Env): boolean {
  const raw = env[ENV.tracing];
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  throw new ConfigError(`${ENV.tracing} must be true or false (got ${raw})`);
}

function metricsNamespace(env: Env): string {
  const raw = env[ENV.metricsNamespace];
  if (raw === undefined || raw === '') return METRICS_NAMESPACE;
  if (!isMetricsNamespace(raw)) {
    throw new ConfigError(`${ENV.metricsNamespace} is not a CloudWatch namespace of our own (got ${raw})`);
  }
  return raw;
}

/**
 * Reads the configuration shared by the enqueue API, the workers and the supervisor, with
 * routes for `types` (the API's catalog, a worker's own type; the supervisor lists its types
 * and calls {@link withTypes}); throws {@link ConfigError} naming a missing or malformed variable.
 */
export function platformConfigFromEnv(env: Env = process.env, types: readonly string[] = []): PlatformConfig {
  const tableName = requireEnv(env, ENV.table);
  const queues = queueNaming(env);
  const receives = maxReceiveCount(env);
  const digest = env[ENV.typesDigest];
  const grants = env[ENV.grantsParameter];
  const bucket = env[ENV.payloadBucket];
  return {
    tableName,
    routes: namedRoutes(queues, types, receives),
    queues,
    ...(digest ? { typesDigest: digest } : {}),
    ...(receives !== undefined ? { maxReceiveCount: receives } : {}),
    scheduleGroup: requireEnv(env, ENV.scheduleGroup),
    schedulerRoleArn: requireEnv(env, ENV.schedulerRoleArn),
    retentionDays: retentionDays(env),
    logLevel: logLevel(env),
    tracing: tracing(env),
    metricsNamespace: metricsNamespace(env),
    ...(grants ? { grantsParameter: grants } : {}),
    ...(bucket ? { payloadBucket: bucket } : {}),
  };
}

/** The configuration with routes for exactly `types`, named by its queue naming. */
export function withTypes(config: PlatformConfig, types: readonly string[]): PlatformConfig {
  const { queues } = config;
  if (!queues) throw new ConfigError('the configuration has no queue naming to route job types by');
  return {
    ...config,
    routes: namedRoutes(queues, types, config.maxReceiveCount),
  };
}

/**
 * Serialises configuration back into environment variables (used by the local harness): the
 * queue naming, and the digest of the routed types. Every route must follow the naming.
 */
export function platformConfigToEnv(config: PlatformConfig): Record<string, string> {
  const { queues } = config;
  if (!queues) throw new ConfigError('a configuration without queue naming has no environment form');
  const counts = new Set(Object.values(config.routes).map((route) => route.maxReceiveCount));
  if (config.maxReceiveCount !== undefined) counts.add(config.maxReceiveCount);
  counts.delete(undefined);
  for (const [type, route] of Object.entries(config.routes)) {
    const named = namedRoute(queues, type, route.maxReceiveCount);
    if (named.queueUrl !== route.queueUrl || named.queueArn !== route.queueArn) {
      throw new ConfigError(`the route of "${type}" does not follow the queue naming (${route.queueUrl})`);
    }
  }
  if (counts.size > 1) throw new ConfigError('routes with different maxReceiveCount have no environment form');
  const [receives] = [...counts];
  return {
    [ENV.table]: config.tableName,
    [ENV.queueUrlBase]: queues.urlBase,
    [ENV.queueArnBase]: queues.arnBase,
    [ENV.queuePrefix]: queues.prefix,
    [ENV.typesDigest]: config.typesDigest ?? typesDigest(Object.keys(config.routes)),
    ...(receives !== undefined ? { [ENV.maxReceiveCount]: String(receives) } : {}),
    [ENV.scheduleGroup]: config.scheduleGroup,
    [ENV.schedulerRoleArn]: config.schedulerRoleArn,
    [ENV.retentionDays]: String(config.retentionDays),
    [ENV.logLevel]: config.logLevel,
    ...(config.tracing ? { [ENV.tracing]: 'true' } : {}),
    ...(config.metricsNamespace !== undefined ? { [ENV.metricsNamespace]: config.metricsNamespace } : {}),
    ...(config.grantsParameter !== undefined ? { [ENV.grantsParameter]: config.grantsParameter } : {}),
    ...(config.payloadBucket !== undefined ? { [ENV.payloadBucket]: config.payloadBucket } : {}),
  };
}
