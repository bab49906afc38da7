import type { RetryPolicy } from '../../shared/core/backoff';
import { JOB_TYPE_PATTERN, type JobTypeSpec, MAX_TIMEOUT_MS } from '../../shared/core/job-type';
import { MAX_RECEIVE_COUNT } from '../../shared/core/queue-settings';

/** What the infrastructure reads from a job type's spec. Every {@link JobTypeSpec} fits. */
export type JobTypeInfo = Pick<JobTypeSpec, 'type' | 'timeoutMs'> & {
  readonly retry?: Pick<RetryPolicy, 'maxAttempts'>;
};

/** Options of {@link JobPlatform.addJobType}. */
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
   * Messages per worker invocation, an integer from 1 to 10.
   * @default 10
   */
  readonly batchSize?: number;
  /**
   * Worker memory in MB, an integer from 128 to 10240.
   * @default 512
   */
  readonly memorySize?: number;
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
  readonly memorySize: number;
  readonly maxReceiveCount: number;
}

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
    batchSize: options.batchSize ?? 10,
    memorySize: options.memorySize ?? 512,
    maxReceiveCount: options.maxReceiveCount ?? MAX_RECEIVE_COUNT,
  };
  requireInt(spec.type, 'timeoutMs', spec.timeoutMs, 1000, MAX_TIMEOUT_MS);
  requireInt(spec.type, 'concurrency', resolved.concurrency, 2, 1000, ' (SQS event source MaximumConcurrency)');
  requireInt(spec.type, 'batchSize', resolved.batchSize, 1, 10);
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
  return resolved;
}
