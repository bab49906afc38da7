import { isMetricsNamespace, METRICS_NAMESPACE } from './core/metrics';
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
  /** JSON `{ [type]: { queueUrl, queueArn, dlqUrl?, dlqArn? } }`: where each deployed job type is sent. */
  routes: 'ORRERY_ROUTES',
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

/** What the enqueue API needs to know about its deployment. */
export interface PlatformConfig {
  tableName: string;
  routes: Record<string, Route>;
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
}

type Env = Record<string, string | undefined>;

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

function parseRoutes(raw: string): Record<string, Route> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError(`${ENV.routes} is not valid JSON`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(`${ENV.routes} must be a JSON object of { type: { queueUrl, queueArn } }`);
  }
  const routes: Record<string, Route> = {};
  for (const [type, value] of Object.entries(parsed as Record<string, unknown>)) {
    const route = value as Partial<Route> | null;
    if (!route || typeof route.queueUrl !== 'string' || typeof route.queueArn !== 'string') {
      throw new ConfigError(`${ENV.routes}.${type} needs string queueUrl and queueArn`);
    }
    routes[type] = { queueUrl: route.queueUrl, queueArn: route.queueArn };
    if (typeof route.dlqUrl === 'string' && typeof route.dlqArn === 'string') {
      Object.assign(routes[type], { dlqUrl: route.dlqUrl, dlqArn: route.dlqArn });
    }
    if (route.maxReceiveCount !== undefined) {
      if (!Number.isInteger(route.maxReceiveCount) || route.maxReceiveCount < 1) {
        throw new ConfigError(`${ENV.routes}.${type}.maxReceiveCount must be a positive integer`);
      }
      Object.assign(routes[type], { maxReceiveCount: route.maxReceiveCount });
    }
  }
  return routes;
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
 * Reads the configuration shared by the enqueue API and the workers (a worker's routes hold
 * its own type); throws {@link ConfigError} naming a missing or malformed variable.
 */
export function platformConfigFromEnv(env: Env = process.env): PlatformConfig {
  return {
    tableName: requireEnv(env, ENV.table),
    routes: parseRoutes(requireEnv(env, ENV.routes)),
    scheduleGroup: requireEnv(env, ENV.scheduleGroup),
    schedulerRoleArn: requireEnv(env, ENV.schedulerRoleArn),
    retentionDays: retentionDays(env),
    logLevel: logLevel(env),
    tracing: tracing(env),
    metricsNamespace: metricsNamespace(env),
  };
}

/** Serialises configuration back into environment variables (used by CDK and the local harness). */
export function platformConfigToEnv(config: PlatformConfig): Record<string, string> {
  return {
    [ENV.table]: config.tableName,
    [ENV.routes]: JSON.stringify(config.routes),
    [ENV.scheduleGroup]: config.scheduleGroup,
    [ENV.schedulerRoleArn]: config.schedulerRoleArn,
    [ENV.retentionDays]: String(config.retentionDays),
    [ENV.logLevel]: config.logLevel,
    ...(config.tracing ? { [ENV.tracing]: 'true' } : {}),
    ...(config.metricsNamespace !== undefined ? { [ENV.metricsNamespace]: config.metricsNamespace } : {}),
  };
}
