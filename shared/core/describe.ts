import type { JobTypeSpec } from './job-type';

/** Largest `details` object kept in a log line, as JSON. */
export const DESCRIBE_MAX_CHARS = 1024;

/**
 * Log fields about a job's payload: `{ details }` from the job type's `describe(payload)`, or
 * nothing when the type has none. Payloads themselves are never logged. Never throws: a
 * `describe` that throws, returns a non-object or too much is reported, not propagated.
 *
 * @example
 * log.info('attempt started', { token, ...describeJob(spec, job.payload) });
 */
export function describeJob(
  spec: Pick<JobTypeSpec, 'describe'> | undefined,
  payload: unknown,
): Record<string, unknown> {
  if (!spec?.describe) return {};
  try {
    const details = spec.describe(payload);
    if (details === null || typeof details !== 'object' || Array.isArray(details)) {
      return { details: '(describe did not return an object)' };
    }
    const text = JSON.stringify(details);
    if (text.length > DESCRIBE_MAX_CHARS)
      return { details: `(describe returned ${text.length} chars; limit ${DESCRIBE_MAX_CHARS})` };
    return { details: JSON.parse(text) as Record<string, unknown> };
  } catch {
    return { details: '(describe threw)' };
  }
}
