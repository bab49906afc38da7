import * as z from 'zod';
import { ValidationError } from '../errors';
import { backoffSchema, MAX_ATTEMPTS_LIMIT } from './backoff';
import { MAX_PARENTS, PARENT_POLICIES } from './dependencies';
import { MAX_FLOW_KEY_LENGTH } from './flow';
import { pastSqsDelay } from './hand-off';
import { JOB_TYPE_PATTERN } from './job-type';
import { JOB_ID_PATTERN } from './limits';
import { MAX_PRIORITY } from './priority';

export {
  JOB_ID_PATTERN,
  jsonBytes,
  MAX_PAYLOAD_BYTES,
  MAX_REQUEST_BYTES,
  MAX_RESULT_BYTES,
  SQS_MAX_DELAY_SECONDS,
} from './limits';

/** How far ahead a job may be scheduled: 366 days. */
export const MAX_HORIZON_SECONDS = 366 * 24 * 3600;
/** A `runAt` at most this far in the past is treated as "now" (clock skew between callers). */
export const PAST_TOLERANCE_MS = 5_000;

export const jobIdSchema = z
  .string()
  .regex(JOB_ID_PATTERN, 'must be 1-64 characters of A-Z a-z 0-9 _ . - starting with a letter or digit');

/**
 * One parent in `dependsOn`: its id, or `{ id, onParentFailure }`. The policy says what the job
 * does when that parent fails, is cancelled, expires or is skipped (see core/dependencies.ts).
 */
export const parentRefSchema = z.union([
  jobIdSchema,
  z
    .object({
      id: jobIdSchema,
      /** @default 'fail' */
      onParentFailure: z.enum(PARENT_POLICIES, `must be one of: ${PARENT_POLICIES.join(', ')}`).optional(),
    })
    .strict(),
]);

/** Parents of a job: it starts once they all succeeded (or ended under an `ignore` policy). */
export const dependsOnSchema = z.array(parentRefSchema).min(1).max(MAX_PARENTS);

/**
 * A request's `priority`, documented as an integer 0 to {@link MAX_PRIORITY} but taken as any
 * JSON value: like the payload, it is checked against the job type (`resolvePriority` in
 * core/priority.ts), so that every refusal of it, a bad value or a type without the option,
 * answers one code, 400 `invalid_priority`, naming the field.
 */
export function priorityField(description: string) {
  return z.unknown().meta({ type: 'integer', minimum: 0, maximum: MAX_PRIORITY, description }).optional();
}

export const enqueueRequestSchema = z
  .object({
    type: z.string().regex(JOB_TYPE_PATTERN, 'must be a registered job type name'),
    payload: z.record(z.string(), z.unknown(), 'must be a JSON object'),
    /**
     * The `ref` of an upload (`POST /uploads`) holding the payload, instead of `payload`: for a
     * payload over the Function URL's 6 MB. Read and validated as an inline payload is.
     */
    payloadRef: z.string().max(64).optional(),
    id: z
      .string()
      .regex(JOB_ID_PATTERN, 'must be 1-64 characters of A-Z a-z 0-9 _ . - starting with a letter or digit')
      .optional(),
    delaySeconds: z.int().min(0).max(MAX_HORIZON_SECONDS).optional(),
    runAt: z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time with a time zone' }).optional(),
    maxAttempts: z.int().min(1).max(MAX_ATTEMPTS_LIMIT).optional(),
    /** Overrides the job type's backoff for this job. */
    backoff: z.optional(backoffSchema),
    /** Dispatch deadline: a job not started by then ends `expired` without running (see core/scheduling.ts). */
    dispatchBy: z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time with a time zone' }).optional(),
    /** The key of the job type's first keyed concurrency limit, instead of the one from the payload. */
    concurrencyKey: z.string().min(1).max(MAX_FLOW_KEY_LENGTH).optional(),
    /** The key of the job type's singleton, instead of the one from the payload. */
    singletonKey: z.string().min(1).max(MAX_FLOW_KEY_LENGTH).optional(),
    /** Jobs this one waits for (at most 1,000, no duplicates, not itself); see docs/workflows.md. */
    dependsOn: dependsOnSchema.optional(),
    priority: priorityField(
      `Only for job types with a priority option: the job's place in the line of its type's concurrency or singleton limit or throttle, 0 to ${MAX_PRIORITY}, higher first. Default: the type's (priority.default). A type without the option refuses it (400 invalid_priority)`,
    ),
  })
  .strict();

export type EnqueueRequest = z.output<typeof enqueueRequestSchema>;

/** When a new job runs, and its state: `scheduled` when it is handed on through a schedule (core/hand-off.ts). */
export interface EnqueuePlan {
  runAt: number;
  state: 'queued' | 'scheduled';
}

/** Decides when a job runs. Throws {@link ValidationError} for bad times. */
export function planEnqueue(request: Pick<EnqueueRequest, 'delaySeconds' | 'runAt'>, now: number): EnqueuePlan {
  if (request.delaySeconds !== undefined && request.runAt !== undefined) {
    throw new ValidationError('give delaySeconds or runAt, not both', [
      { path: 'runAt', message: 'cannot be combined with delaySeconds' },
    ]);
  }
  let runAt = now;
  if (request.delaySeconds !== undefined) runAt = now + request.delaySeconds * 1000;
  if (request.runAt !== undefined) {
    runAt = Date.parse(request.runAt);
    if (runAt < now - PAST_TOLERANCE_MS) {
      throw new ValidationError('runAt is in the past', [
        { path: 'runAt', message: `must not be earlier than now (${new Date(now).toISOString()})` },
      ]);
    }
    if (runAt > now + MAX_HORIZON_SECONDS * 1000) {
      throw new ValidationError('runAt is too far in the future', [
        { path: 'runAt', message: `must be at most ${MAX_HORIZON_SECONDS / 86_400} days ahead` },
      ]);
    }
    runAt = Math.max(runAt, now);
  }
  return { runAt, state: pastSqsDelay(runAt, now) ? 'scheduled' : 'queued' };
}
