/**
 * The API's request schemas for recurring schedules (`POST /schedules`, `PUT /schedules/{name}`).
 * Apart from ./model.ts so that the worker and the supervisor, which load the model for its rules,
 * do not build them, nor load full zod for them.
 */
import * as z from 'zod';
import { MAX_ATTEMPTS_LIMIT } from '../core/backoff';
import { priorityField } from '../core/enqueue';
import { JOB_TYPE_PATTERN } from '../core/job-type';
import { MAX_PRIORITY } from '../core/priority';
import { OVERLAP_POLICIES, SCHEDULE_NAME_PATTERN } from './model';

const isoDateTime = z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time with a time zone' });

/** Body of `POST /schedules` (and of `PUT /schedules/{name}`, where `name` may be left out). */
export const scheduleRequestSchema = z
  .object({
    name: z
      .string()
      .regex(SCHEDULE_NAME_PATTERN, 'must be 1-64 characters of A-Z a-z 0-9 _ . - starting with a letter or digit'),
    type: z.string().regex(JOB_TYPE_PATTERN, 'must be a registered job type name'),
    payload: z.record(z.string(), z.unknown(), 'must be a JSON object'),
    /** Five-field Unix cron (`30 9 * * 1-5`, `@daily`) or AWS `cron(min hr dom mon dow yr)`. */
    cron: z.string().min(1).max(256).optional(),
    /** `5 minutes` or `rate(5 minutes)`. */
    rate: z.string().min(1).max(64).optional(),
    /** IANA time zone the cron fields are read in. @default 'UTC' */
    timezone: z.string().min(1).max(64).optional(),
    startAt: isoDateTime.optional(),
    endAt: isoDateTime.optional(),
    maxAttempts: z.int().min(1).max(MAX_ATTEMPTS_LIMIT).optional(),
    /** @default 'allow' */
    overlap: z.enum(OVERLAP_POLICIES).optional(),
    priority: priorityField(
      `Only for job types with a priority option: the priority of every run the schedule makes, 0 to ${MAX_PRIORITY}, higher first. Default: the type's (priority.default), resolved when the schedule is written. A type without the option refuses it (400 invalid_priority)`,
    ),
  })
  .strict();

export type ScheduleRequest = z.output<typeof scheduleRequestSchema>;

/** `PUT /schedules/{name}`: the whole definition again; `name`, if given, must match the path. */
export const scheduleUpdateSchema = scheduleRequestSchema.extend({ name: scheduleRequestSchema.shape.name.optional() });
