import type { RetryPolicy } from '../../shared/core/backoff';
import { type BatchOptions, batchProblem, MAX_BATCH_SIZE_WITHOUT_WINDOW } from '../../shared/core/batch';
import { JOB_TYPE_PATTERN, type JobTypeSpec, MAX_TIMEOUT_MS } from '../../shared/core/job-type';
import { MAX_RECEIVE_COUNT } from '../../shared/core/queue-settings';

/** What the infrastructure reads from a job type's spec. Every {@link JobTypeSpec} fits. */
export type JobTypeInfo = Pick<JobTypeSpec, 'type' | 'timeoutMs'> & {
  readonly retry?: Pick<RetryPolicy, 'maxAttempts'>;
  /** A batch type's event source mapping takes its `BatchSize` and batching window from here. */
  readonly batch?: Pick<BatchOptions, 'maxSize' | 'maxWaitSeconds'>;
};

/**
 * Options of {@link JobPlatform.addJobType}.
 *
 * There is no `timeout`: the worker's Lambda timeout is derived from the spec's `timeoutMs` (plus
 * 30 s for the worker's own writes, at most 900 s), and the ready queue's visibility timeout from
 * that. The worker aborts an attempt at `timeoutMs` and records a timed-out attempt, retried by
 * the spec's policy; a shorter Lambda timeout would kill attempts before that (seen as lost, not
 * failed), a longer one would only let a handler that ignores `ctx.signal` run, billed, longer
 * and delay redelivery after a crash. To give a job more time, raise `timeoutMs` in its spec.
 *
 * There is no `grants` either: grant to the worker {@link JobPlatform.addJobType} returns, the
 * way CDK grants to any function (`bucket.grantRead(emails.worker)`).
 */
export interface JobTypeOptions {
  /** The job type's spec, e.g. from `functions/jobs/catalog.ts`. */
  readonly spec: JobTypeInfo;
  /**
   * Handler file exporting `handler`: absolute, or relative to the repository root (from the
   * installed package: to the working directory). It is bundled from the app's own project.
   */
  readonly entry: string;
  /**
   * Most concurrent worker invocations for this type (event source mapping
   * `MaximumConcurrency`), an integer from 2 to 1000.
   * @default 5
   */
  readonly concurrency?: number;
  /**
   * Messages per worker invocation, an integer from 1 to 10. A type whose spec has `batch` takes
   * its size (and batching window) from there, and refuses this option.
   * @default 10, or the spec's `batch.maxSize`
   */
  readonly batchSize?: number;
  /**
   * Worker memory in MB, an integer from 128 to 10240 (Lambda's range). Lambda gives CPU in
   * proportion to memory.
   * @default 512
   */
  readonly memorySize?: number;
  /**
   * Environment variables of this type's worker only (not of the API, the supervisor or other
   * types' workers), beside Orrery's own. Names follow Lambda's rule (a letter, then letters,
   * digits and `_`); `ORRERY_*` and `NODE_OPTIONS` are Orrery's and are refused. Values may be
   * tokens (`bucket.bucketName`, `secret.secretArn`). Orrery's variables and these together must
   * stay within Lambda's 4 KB (checked at synthesis). Keep secrets out: pass a secret's ARN and
   * read the secret at run time.
   * @default no variables of your own
   * @example
   * environment: { MAILER_URL: 'https://mailer.example.com', MAILER_SECRET_ARN: secret.secretArn }
   */
  readonly environment?: Readonly<Record<string, string>>;
  /**
   * Receives before SQS moves a message to the DLQ. Must exceed the spec's `retry.maxAttempts`,
   * because every attempt (and every duplicate delivery) is a receive.
   * @default MAX_RECEIVE_COUNT (30)
   */
  readonly maxReceiveCount?: number;
}

/** {@link JobTypeOptions} with every default applied. */
export interface ResolvedJobTypeOptions {
  readonly spec: JobTypeInfo;
  readonly entry: string;
  readonly concurrency: number;
  readonly batchSize: number;
  /** Event source mapping `MaximumBatchingWindowInSeconds`: the spec's `batch.maxWaitSeconds`, else none. */
  readonly maxBatchingWindowSeconds: number | undefined;
  readonly memorySize: number;
  readonly environment: Readonly<Record<string, string>>;
  readonly maxReceiveCount: number;
}

/** Names of a worker's environment that are Orrery's own: every `ENV` name starts with it. */
export const RESERVED_ENV_PREFIX = 'ORRERY_';
/** Set by every Orrery function (`--enable-source-maps`). */
const RESERVED_ENV_NAMES = new Set(['NODE_OPTIONS']);
/** Lambda's rule for a variable's name. */
const ENV_NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_]+$/;

function requireInt(type: string, name: string, value: number, min: number, max: number, why = ''): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`job type "${type}": ${name} must be an integer from ${min} to ${max}${why} (got ${value})`);
  }
}

/** `send-email` → `SendEmail`: construct ids and output names derived from a type. */
export function pascalCase(type: string): string {
  return type
    .split('-')
    .filter((part) => part.length > 0)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}

/** Checks every option (throwing a message that names the type and the option) and applies defaults. */
export function resolveJobTypeOptions(options: JobTypeOptions): ResolvedJobTypeOptions {
  const { spec } = options;
  if (!JOB_TYPE_PATTERN.test(spec.type)) {
    throw new Error(`job type "${spec.type}" must match ${JOB_TYPE_PATTERN} (lower-case letters, digits and -)`);
  }
  const resolved: ResolvedJobTypeOptions = {
    spec,
    entry: options.entry,
    concurrency: options.concurrency ?? 5,
    batchSize: spec.batch?.maxSize ?? options.batchSize ?? 10,
    maxBatchingWindowSeconds: spec.batch?.maxWaitSeconds,
    memorySize: options.memorySize ?? 512,
    environment: options.environment ?? {},
    maxReceiveCount: options.maxReceiveCount ?? MAX_RECEIVE_COUNT,
  };
  requireInt(spec.type, 'timeoutMs', spec.timeoutMs, 1000, MAX_TIMEOUT_MS);
  requireInt(spec.type, 'concurrency', resolved.concurrency, 2, 1000, ' (SQS event source MaximumConcurrency)');
  if (spec.batch) {
    if (options.batchSize !== undefined) {
      throw new Error(
        `job type "${spec.type}": batchSize is the spec's batch.maxSize for a batch type; remove the batchSize option`,
      );
    }
    const problem = batchProblem(spec.batch);
    if (problem) throw new Error(`job type "${spec.type}": ${problem}`);
  } else {
    requireInt(spec.type, 'batchSize', resolved.batchSize, 1, MAX_BATCH_SIZE_WITHOUT_WINDOW);
  }
  requireInt(spec.type, 'memorySize', resolved.memorySize, 128, 10_240);
  const attempts = spec.retry?.maxAttempts ?? 1;
  requireInt(
    spec.type,
    'maxReceiveCount',
    resolved.maxReceiveCount,
    attempts + 1,
    1000,
    ' (more than retry.maxAttempts)',
  );
  if (options.entry.trim() === '') throw new Error(`job type "${spec.type}": entry must name the handler file`);
  checkEnvironmentNames(spec.type, resolved.environment);
  return resolved;
}

function checkEnvironmentNames(type: string, environment: Readonly<Record<string, string>>): void {
  for (const name of Object.keys(environment)) {
    if (name.startsWith(RESERVED_ENV_PREFIX) || RESERVED_ENV_NAMES.has(name)) {
      throw new Error(
        `job type "${type}": environment variable ${name} collides with Orrery's own ` +
          `(${RESERVED_ENV_PREFIX}* and ${[...RESERVED_ENV_NAMES].join(', ')} are set by the platform)`,
      );
    }
    if (!ENV_NAME_PATTERN.test(name)) {
      throw new Error(
        `job type "${type}": environment variable name "${name}" must be a letter followed by letters, digits or _ (Lambda's rule)`,
      );
    }
  }
}
