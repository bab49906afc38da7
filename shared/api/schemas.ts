import * as z from 'zod';
import type { JobSummary } from '../core/control-ports';
import { PARENT_POLICIES } from '../core/dependencies';
import { enqueueRequestSchema, JOB_ID_PATTERN } from '../core/enqueue';
import type { AttemptError, JobProgress, JobView } from '../core/job';
import { JOB_TYPE_PATTERN } from '../core/job-type';
import { LIST_LIMIT_MAX } from '../core/list';
import { MAX_PAYLOAD_CONDITIONS } from '../core/payload-filter';
import { JOB_STATES } from '../core/states';
import { OVERLAP_POLICIES, SCHEDULE_CHANGE_ACTIONS, type ScheduleView } from '../schedules/model';

/**
 * The HTTP contract as zod schemas: request schemas validate what the API reads, response
 * schemas describe what it answers. `GET /openapi.json` is generated from these (see
 * `openapi.ts`), and the contract tests parse every response with them, so the document and
 * the API cannot drift apart. Type-level checks below tie the response schemas to the
 * TypeScript types the code returns.
 */

const isoTime = z.iso.datetime();
const typeName = z.string().regex(JOB_TYPE_PATTERN, 'must be a job type name');
const jobId = z.string().regex(JOB_ID_PATTERN);

// ---------------------------------------------------------------- responses

export const jobStateSchema = z.enum(JOB_STATES);

export const attemptErrorSchema = z
  .object({
    attempt: z.int().min(1),
    at: isoTime,
    reason: z.string().meta({
      description:
        '`error`, `timeout`, `invalid_payload`, `lease_expired` or `nondeterministic` (the job is then `held` for an operator)',
    }),
    name: z.string(),
    message: z.string(),
    stack: z.string().optional(),
  })
  .strict();

export const jobProgressSchema = z
  .object({ percent: z.number().min(0).max(100), detail: z.string().optional(), at: isoTime })
  .strict();

export const jobViewSchema = z
  .object({
    id: jobId,
    type: typeName,
    state: jobStateSchema,
    payload: z.record(z.string(), z.unknown()),
    attempts: z.int().min(0).meta({ description: 'Attempts started in the current series' }),
    maxAttempts: z.int().min(1),
    createdAt: isoTime,
    updatedAt: isoTime,
    runAt: isoTime,
    startedAt: isoTime.nullable(),
    finishedAt: isoTime.nullable(),
    lastError: attemptErrorSchema.nullable(),
    errors: z.array(attemptErrorSchema),
    progress: jobProgressSchema.nullable(),
    result: z.unknown(),
    retries: z.int().min(0).meta({ description: 'Manual retries (`POST /jobs/{id}/retry`, and reruns) so far' }),
    reruns: z
      .int()
      .min(1)
      .optional()
      .meta({ description: 'Only for a job that was rerun (`POST /jobs/{id}/rerun`): how many times' }),
    dispatchBy: isoTime.optional().meta({ description: 'Only when set: the dispatch deadline' }),
    schedule: z.string().optional().meta({ description: 'Only for schedule runs: the schedule that created the run' }),
    enqueuedBy: z.string().optional().meta({
      description: "Who enqueued the job: the caller's IAM ARN as it signed (an assumed role's carries its session)",
    }),
    controls: z
      .array(
        z.object({
          action: z.enum(['cancel', 'retry', 'rerun']),
          by: z.string().meta({ description: "The caller's IAM ARN, or `anonymous`" }),
          at: isoTime,
        }),
      )
      .optional()
      .meta({
        description: 'Operator actions on the job (who cancelled, retried or reran it, when), oldest first',
      }),
    concurrencyKeys: z
      .array(z.string())
      .optional()
      .meta({ description: "Only for job types with concurrency limits: the job's key value for each limit" }),
    singletonKey: z
      .string()
      .optional()
      .meta({ description: "Only for job types with a singleton: the job's key value" }),
    throttleKey: z.string().optional().meta({ description: "Only for job types with a throttle: the job's key value" }),
    priority: z
      .number()
      .int()
      .optional()
      .meta({ description: 'Only for job types with a priority option: 0 to 10, higher first' }),
    debounceKey: z.string().optional().meta({ description: "Only for job types with a debounce: the job's key value" }),
    debouncedInto: z
      .string()
      .optional()
      .meta({ description: 'Only for a job a debounce replaced: the run that took its place' }),
    waitingFor: z
      .object({
        kind: z.enum(['concurrency', 'singleton', 'throttle', 'debounce', 'sleep', 'signal', 'invoke']),
        key: z.string().meta({ description: 'The key value; for a sleep, a signal or an invoke, its name' }),
        children: z.int().optional().meta({ description: 'invoke: how many invoked jobs it waits for' }),
        since: isoTime,
        until: isoTime.optional().meta({
          description:
            'throttle: when its turn comes; debounce: when it runs unless replaced; sleep: when it wakes; signal: when the wait times out; invoke: the latest its children may end (the job lives at most 366 days)',
        }),
      })
      .optional()
      .meta({
        description:
          'Only while a job waits to start: for a concurrency or singleton slot, its throttle turn, its debounce quiet period, the end of its sleep, a signal, or the jobs it invoked (`ctx.invoke`); the key or name, and since when',
      }),
    parents: z
      .array(z.object({ id: jobId, onParentFailure: z.enum(PARENT_POLICIES) }))
      .optional()
      .meta({ description: 'Only for a job with dependsOn: its parents and the policy of each edge' }),
    pendingParents: z
      .int()
      .min(0)
      .optional()
      .meta({ description: 'Only while the job waits for its parents: how many have not finished' }),
    children: z
      .array(jobId)
      .optional()
      .meta({ description: 'Only for a job others depend on: the jobs registered as its children' }),
    invokedBy: z.array(jobId).optional().meta({
      description:
        "Only for a job started by `ctx.invoke`: the jobs that invoked it (also among `children`); a job's invoked jobs are `GET /jobs/{id}/invoked`",
    }),
    resumes: z
      .int()
      .optional()
      .meta({ description: 'Only for a workflow that waited: how many attempts ended in a sleep or a signal wait' }),
    skipReason: z
      .object({
        kind: z.enum(['singleton', 'rate-limit', 'debounce']),
        key: z.string(),
        by: z
          .string()
          .optional()
          .meta({ description: 'singleton: the job that held the key; debounce: the job that replaced it' }),
        at: isoTime,
      })
      .optional()
      .meta({ description: 'Only for a skipped job: why flow control turned it away' }),
    cost: z
      .object({
        requests: z.int().min(0).meta({ description: 'AWS requests (HTTP requests, SDK retries included)' }),
        writeUnits: z.number().min(0).meta({ description: 'DynamoDB write units consumed' }),
      })
      .strict()
      .optional()
      .meta({
        description:
          "Only once an attempt ended: what the platform's own AWS requests for the job cost, over the deliveries that ran an attempt (the handler's own calls are not in it)",
      }),
  })
  .strict();

export const jobSummarySchema = z
  .object({
    id: jobId,
    type: typeName,
    state: jobStateSchema,
    createdAt: isoTime,
    runAt: isoTime,
    attempts: z.int().min(0),
    finishedAt: isoTime.nullable(),
  })
  .strict();

export const jobPageSchema = z
  .object({
    items: z.array(jobSummarySchema).meta({ description: 'Newest first' }),
    nextCursor: z
      .string()
      .nullable()
      .meta({ description: 'Pass as `cursor` for the next page; null on the last page' }),
  })
  .strict();

export const fieldIssueSchema = z.object({ path: z.string(), message: z.string() }).strict();

/** The one error shape: `{ error: { code, message, issues?, ... } }`. */
export const errorBodySchema = z
  .object({
    code: z.string().meta({ description: 'Machine-readable, e.g. `validation_failed`, `job_not_found`' }),
    message: z.string(),
    issues: z.array(fieldIssueSchema).optional(),
    requestId: z.string().optional().meta({ description: 'On 5xx: the id to look up in the logs' }),
    limitBytes: z.int().optional().meta({ description: 'On 413: the limit that was exceeded' }),
    state: jobStateSchema.optional().meta({ description: 'On 409 illegal_state: the job state now' }),
    action: z
      .enum(['enqueue', 'signal', 'control', 'operate', 'read'])
      .optional()
      .meta({ description: "On 403 forbidden: the action the caller's grants do not allow" }),
    control: z
      .enum(['cancel', 'retry', 'rerun', 'bulk'])
      .optional()
      .meta({ description: 'On 403 forbidden of a control call: its sub-action' }),
    type: z.string().optional().meta({ description: 'On 403 forbidden: the first job type not granted' }),
  })
  .catchall(z.unknown());

export const errorSchema = z.object({ error: errorBodySchema }).strict();

export const batchItemResultSchema = z.discriminatedUnion('status', [
  z.object({ index: z.int().min(0), status: z.literal('created'), job: jobSummarySchema }).strict(),
  z.object({ index: z.int().min(0), status: z.literal('existing'), job: jobSummarySchema }).strict(),
  z.object({ index: z.int().min(0), status: z.literal('error'), error: errorBodySchema }).strict(),
]);

export const batchResponseSchema = z
  .object({ results: z.array(batchItemResultSchema).meta({ description: 'One per submitted job, in order' }) })
  .strict();

export const deadLetterSchema = z
  .object({
    messageId: z.string(),
    jobId: z.string().nullable().meta({ description: 'The job id when the body is a job message' }),
    receiveCount: z.int().min(0),
    sentAt: isoTime.nullable(),
    body: z.string().nullable().meta({ description: 'First 256 characters of a body that is not a job message' }),
  })
  .strict();

export const lastRedriveSchema = z
  .object({
    by: z.string().meta({
      description: "The caller's IAM ARN as it signed (an assumed role's carries its session), or `anonymous`",
    }),
    at: isoTime.meta({ description: 'When the redrive was made' }),
    method: z.enum(['move-task', 'receive-send']).meta({ description: 'How it moved the messages (see the redrive)' }),
    moved: z.int().min(0).optional().meta({
      description: 'Only when known: the messages it moved (a receive-send redrive; a move task moves them later)',
    }),
  })
  .strict();

export const dlqPeekSchema = z
  .object({
    type: typeName,
    approximateDepth: z.object({ visible: z.int().min(0), inFlight: z.int().min(0) }).strict(),
    messages: z.array(deadLetterSchema),
    lastRedrive: lastRedriveSchema.nullable().meta({
      description:
        'The latest redrive of the type that started a move task or moved messages: who, when, how, how many; null when none',
    }),
  })
  .strict();

export const redriveResultSchema = z.discriminatedUnion('method', [
  z
    .object({
      method: z.literal('move-task'),
      status: z.enum(['started', 'running']),
      taskHandle: z.string().nullable(),
      approximateMessages: z.int().min(0).nullable(),
    })
    .strict()
    .meta({ description: 'SQS moves the messages asynchronously (StartMessageMoveTask)' }),
  z
    .object({
      method: z.literal('receive-send'),
      moved: z.int().min(0),
      stoppedBy: z.enum(['empty', 'limit', 'time', 'send_failed']),
      remaining: z.int().min(0).meta({ description: 'Approximate messages left in the DLQ' }),
    })
    .strict()
    .meta({ description: 'Moved by the API: each message sent to the ready queue, then deleted from the DLQ' }),
]);

// ---------------------------------------------------------------- requests

export const MAX_BATCH_JOBS = 100;

/** `POST /jobs/batch`: the envelope. Each job is then validated on its own with `enqueueRequestSchema`. */
export const batchRequestSchema = z
  .object({
    jobs: z.array(z.unknown()).min(1, 'must hold 1 to 100 jobs').max(MAX_BATCH_JOBS, 'must hold 1 to 100 jobs'),
  })
  .strict();

/** The batch body as documented: the envelope with each item an enqueue request. */
export const batchRequestDocSchema = batchRequestSchema.extend({
  jobs: z.array(enqueueRequestSchema).min(1).max(MAX_BATCH_JOBS),
});

/** `GET /flows/{id}` and the answer of `POST /flows`: the graph and each node's state. */
export const flowViewSchema = z
  .object({
    id: jobId,
    createdAt: isoTime,
    nodes: z.array(
      z.object({
        id: jobId,
        type: typeName,
        state: jobStateSchema.nullable().meta({ description: 'null when the job is gone (past its retention)' }),
        dependsOn: z.array(z.object({ id: jobId, onParentFailure: z.enum(PARENT_POLICIES) })),
        children: z.array(jobId).meta({ description: 'Jobs of the flow that depend on this one' }),
      }),
    ),
  })
  .meta({ description: 'A flow: its jobs, their edges and states' });

const queryTime = z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time with a time zone' });

/** `GET /jobs` query parameters (all strings on the wire). */
export const listQuerySchema = z
  .object({
    type: typeName.optional().meta({ description: 'Only this job type (default: every deployed type)' }),
    state: jobStateSchema.optional().meta({ description: 'Only jobs in this state' }),
    createdAfter: queryTime.optional().meta({ description: 'Only jobs created at or after this time' }),
    createdBefore: queryTime.optional().meta({ description: 'Only jobs created before this time' }),
    limit: z
      .string()
      .regex(/^(100|[1-9][0-9]?)$/, `must be an integer from 1 to ${LIST_LIMIT_MAX}`)
      .optional()
      .meta({ description: 'Page size, 1 to 100 (default 20)' }),
    cursor: z.string().optional().meta({ description: "The previous page's nextCursor" }),
  })
  .strict();

/** `GET /dlq` query parameters. */
export const dlqQuerySchema = z
  .object({
    type: typeName.meta({ description: 'The job type whose DLQ to look at' }),
    limit: z
      .string()
      .regex(/^(10|[1-9])$/, 'must be an integer from 1 to 10')
      .optional()
      .meta({ description: 'Messages to look at, 1 to 10 (default 10)' }),
  })
  .strict();

export const MAX_REDRIVE_MESSAGES = 1000;

/** `POST /dlq/redrive` body. */
export const redriveRequestSchema = z
  .object({
    type: typeName,
    maxMessages: z
      .int()
      .min(1)
      .max(MAX_REDRIVE_MESSAGES)
      .optional()
      .meta({ description: 'Cap for the fallback receive-and-send loop (default 100); SQS move tasks move all' }),
  })
  .strict();

/** `GET /jobs` as documented: the query parameters and the payload conditions. */
export const listQueryDocSchema = listQuerySchema.extend({
  'payload.{path}': z
    .string()
    .optional()
    .meta({
      description:
        `Payload search: \`payload.<dotted.path>=<value>\`, at most ${MAX_PAYLOAD_CONDITIONS}, all must match. ` +
        'Compares the string form (numbers, booleans and null as their JSON text); objects and arrays never match. ' +
        'Filters the jobs each page reads: a page may hold fewer than `limit` jobs; follow `nextCursor`.',
    }),
});

// ---------------------------------------------------------------- bulk cancel / retry

export const MAX_BULK_IDS = 100;
export const BULK_ACTIONS = ['retry', 'cancel'] as const;

/** `POST /jobs/bulk` body: 1–100 unique job ids and one action. */
export const bulkRequestSchema = z
  .object({
    action: z.enum(BULK_ACTIONS).meta({ description: 'As `POST /jobs/{id}/retry` or `POST /jobs/{id}/cancel`' }),
    ids: z
      .array(jobId)
      .min(1, `must hold 1 to ${MAX_BULK_IDS} job ids`)
      .max(MAX_BULK_IDS, `must hold 1 to ${MAX_BULK_IDS} job ids`),
  })
  .strict()
  .superRefine((body, ctx) => {
    const seen = new Set<string>();
    body.ids.forEach((id, i) => {
      if (seen.has(id)) ctx.addIssue({ code: 'custom', path: ['ids', i], message: `duplicate job id "${id}"` });
      seen.add(id);
    });
  });

export const bulkResultSchema = z
  .object({
    id: jobId,
    status: z.enum(['applied', 'refused', 'not_found', 'forbidden']).meta({
      description:
        "forbidden: the job's type is outside the caller's grant (it changed after the request's check: another job of the same id)",
    }),
    state: jobStateSchema
      .optional()
      .meta({ description: 'applied: the state after the action; refused: the state that refused it' }),
  })
  .strict();

export const bulkResponseSchema = z
  .object({ results: z.array(bulkResultSchema).meta({ description: 'One per id, in the order of `ids`' }) })
  .strict();

// ---------------------------------------------------------------- overview

export const OVERVIEW_WINDOW_MINUTES = { min: 5, max: 1440, default: 60 } as const;

/** `GET /overview` query parameters. */
export const overviewQuerySchema = z
  .object({
    windowMinutes: z
      .string()
      // 5-9, 10-999, 1000-1399, 1400-1439, 1440
      .regex(/^(?:[5-9]|[1-9][0-9]{1,2}|1[0-3][0-9]{2}|14[0-3][0-9]|1440)$/, 'must be an integer from 5 to 1440')
      .optional()
      .meta({ description: 'The window, 5 to 1440 minutes (default 60)' }),
  })
  .strict();

export const overviewBucketSchema = z
  .object({
    start: isoTime,
    created: z.int().min(0).meta({ description: 'Counted jobs created in this bucket' }),
    succeeded: z.int().min(0).meta({ description: 'Counted jobs that succeeded in this bucket (by finishedAt)' }),
    failed: z.int().min(0).meta({ description: 'Counted jobs that failed in this bucket (by finishedAt)' }),
  })
  .strict();

export const overviewTypeSchema = z
  .object({
    type: typeName,
    counts: z.record(jobStateSchema, z.int().min(0)).meta({ description: 'Counted jobs by their state now' }),
    countsScope: z.string().meta({
      description:
        'What was counted: the jobs created since a time (the window start, or later when the window held more ' +
        'jobs than an overview reads, then marked truncated)',
    }),
    dlqDepth: z
      .int()
      .min(0)
      .nullable()
      .meta({ description: "ApproximateNumberOfMessages of the type's DLQ; null when unknown" }),
    oldestQueuedAgeMs: z.int().min(0).nullable().meta({
      description: 'Age since runAt of the oldest counted job still queued whose runAt has passed; null if none',
    }),
    series: z.array(overviewBucketSchema),
  })
  .strict();

export const overviewSchema = z
  .object({
    generatedAt: isoTime,
    windowStart: isoTime,
    bucketMs: z.int().min(1),
    types: z.array(overviewTypeSchema).meta({ description: 'Every deployed type, by name' }),
  })
  .strict();

// ---------------------------------------------------------------- run a schedule now

/** `POST /schedules/{name}/run` body (optional). */
export const runScheduleRequestSchema = z
  .object({
    id: jobId
      .optional()
      .meta({ description: 'The job id (default: derived from the Idempotency-Key header, else random)' }),
  })
  .strict();

/** `POST /schedules/{name}/run` answer: the job, as `GET /jobs/{id}` answers it. */
export const runScheduleResponseSchema = z.object({ job: jobViewSchema }).strict();

// ---------------------------------------------------------------- recurring schedules

const isoOrNull = z.iso.datetime({ offset: true }).nullable();

/** A recurring schedule as the API returns it (see shared/schedules/model.ts `ScheduleView`). */
export const scheduleViewSchema = z.object({
  name: z.string(),
  type: z.string(),
  payload: z.unknown().optional(),
  cron: z.string().nullable().meta({ description: 'AWS 6-field cron(...) form, when the schedule is cron-based' }),
  rate: z.string().nullable(),
  expression: z.string().meta({ description: 'The EventBridge Scheduler expression' }),
  timezone: z.string(),
  startAt: isoOrNull,
  endAt: isoOrNull,
  maxAttempts: z.int(),
  overlap: z.enum(OVERLAP_POLICIES),
  priority: z.int().optional().meta({
    description: 'Only for job types with a priority option: the priority of every run, 0 to 10, higher first',
  }),
  state: z.enum(['enabled', 'paused']),
  nextFireAt: isoOrNull,
  lastFireAt: isoOrNull,
  lastRunId: z.string().nullable(),
  skipped: z.object({ count: z.int(), lastAt: isoOrNull }),
  missed: z.int(),
  createdAt: z.iso.datetime({ offset: true }),
  updatedAt: z.iso.datetime({ offset: true }),
  changedBy: z
    .object({
      action: z.enum(SCHEDULE_CHANGE_ACTIONS),
      by: z.string().meta({
        description: "The caller's IAM ARN as it signed (an assumed role's carries its session), or `anonymous`",
      }),
      at: z.iso.datetime({ offset: true }),
    })
    .optional()
    .meta({
      description:
        'Only when recorded: the latest change by a caller (create, update, pause, resume), written by the same write as the change',
    }),
});

export const schedulePageSchema = z.object({
  schedules: z.array(scheduleViewSchema),
  nextCursor: z.string().nullable(),
});

export const scheduleListQuerySchema = z
  .object({
    limit: z.string().regex(/^\d+$/).optional().meta({ description: 'Schedules per page' }),
    cursor: z.string().optional().meta({ description: 'From the previous page' }),
  })
  .strict();

// ---------------------------------------------------------------- concurrency keys

/** `GET /types/{type}/keys/{key}`: one key value of a type's concurrency limits. */
const paceStateSchema = z.object({
  key: z.string().meta({ description: 'The key value counted (`*`: one key for the whole type)' }),
  limit: z.int().min(1),
  periodSeconds: z.int().min(1),
  burst: z.int().min(1).optional().meta({ description: 'throttle only' }),
  nextStartAt: isoTime.meta({
    description: "The next start the key allows: a throttle's next turn, or when a rate limit accepts again",
  }),
  source: z
    .enum(['spec', 'runtime'])
    .meta({ description: '`runtime`: set by `PUT /types/{type}/keys/{key}/limits`; `spec`: the spec’s holds' }),
  specLimit: z.int().min(1).meta({ description: "The limit in the job type's spec" }),
  specPeriodSeconds: z.int().min(1).meta({ description: "The period in the job type's spec" }),
  setBy: z.string().optional().meta({ description: 'Who set the run-time pace (the caller’s ARN)' }),
  setAt: isoTime.optional().meta({ description: 'When the run-time pace was set' }),
  line: z
    .array(z.object({ jobId: z.string(), rankedAt: isoTime }))
    .optional()
    .meta({
      description:
        'Only for the throttle of a type with priorities: the first 50 jobs waiting for a turn, first served first, with the time each rank stands for',
    }),
});

/** A fair key's share of a limit shared fairly. */
const fairKeySchema = z.object({
  key: z.string(),
  weight: z.number().meta({ description: 'Its weight: the one set at run time, or the spec’s (1 by default)' }),
  weightSource: z.enum(['spec', 'runtime']),
  running: z.int().min(0).meta({ description: 'Its jobs holding a place' }),
  waiting: z.int().min(0).meta({ description: 'Its jobs in line' }),
});

/** One concurrency limit of a key: the limit that holds, the spec's, and where it comes from. */
const keyLimitSchema = z.object({
  index: z.int().min(0).meta({ description: "The limit's place in the type's `concurrency`" }),
  limit: z.int().min(1).meta({ description: 'The limit that holds: the one set at run time, or the spec’s' }),
  specLimit: z.int().min(1).meta({ description: "The limit in the job type's spec" }),
  source: z
    .enum(['spec', 'runtime'])
    .meta({ description: '`runtime`: set by `PUT /types/{type}/keys/{key}/limits`; `spec`: the spec’s holds' }),
  setBy: z.string().optional().meta({ description: 'Who set the run-time limit (the caller’s ARN)' }),
  setAt: isoTime.optional().meta({ description: 'When the run-time limit was set' }),
  key: z.string().meta({ description: 'The key value counted (`*`: the limit has one key for the whole type)' }),
  running: z
    .array(z.object({ jobId: z.string(), since: isoTime }))
    .meta({ description: 'Jobs holding a slot: running, or handed one and about to start' }),
  waiting: z.int().min(0).meta({ description: 'Jobs waiting for a slot of this key' }),
  line: z
    .array(
      z.object({
        jobId: z.string(),
        ticket: z.int().min(0).optional().meta({ description: 'Its ticket, in an oldest-first line' }),
        rankedAt: isoTime.optional().meta({
          description:
            'In a ranked line (priorities, fair share): the time its rank stands for, its due time less its priority’s head start',
        }),
      }),
    )
    .meta({
      description:
        'The first 50 jobs in line, first served first; for a limit shared fairly, the asked key’s own line (which key goes next depends on what runs)',
    }),
  fair: fairKeySchema
    .optional()
    .meta({ description: 'Only for a limit shared fairly (`fairBy`): the asked key’s share' }),
});

/** The body of `PUT /types/{type}/keys/{key}/limits` (checked in shared/core/key-limits.ts). */
export const keyLimitsRequestSchema = z
  .object({
    concurrency: z
      .int()
      .min(1)
      .max(1000)
      .optional()
      .meta({ description: 'The concurrency limit of this key, 1 to 1000 (this or `weight` is required)' }),
    limit: z.int().min(0).optional().meta({
      description:
        "Which of the type's concurrency limits (its index). @default the first limit with a key function, or the only limit",
    }),
    throttle: z
      .object({
        limit: z.int().min(1).max(10_000),
        periodSeconds: z.int().min(1).max(86_400),
        burst: z.int().min(1).max(1000).optional(),
      })
      .strict()
      .optional()
      .meta({
        description:
          "The key's throttle, in place of the spec's (a type with a throttle): starts per period, bursts of `burst`",
      }),
    rateLimit: z
      .object({ limit: z.int().min(1).max(10_000), periodSeconds: z.int().min(1).max(86_400) })
      .strict()
      .optional()
      .meta({
        description:
          "The key's rate limit, in place of the spec's (a type with a rate limit): jobs accepted per period",
      }),
    weight: z.number().gt(0).max(1000).optional().meta({
      description:
        'The weight of this key in the type’s limit shared fairly (`fairBy`): its share of places against the other keys’, more than 0, at most 1000',
    }),
  })
  .strict();

/** The query of `DELETE /types/{type}/keys/{key}/limits`. */
export const keyLimitsQuerySchema = z
  .object({
    limit: z.string().regex(/^\d+$/).optional().meta({
      description: "Which of the type's concurrency limits (its index). @default as in the PUT",
    }),
    field: z.enum(['concurrency', 'weight', 'throttle', 'rateLimit']).optional().meta({
      description:
        'What to remove: the key’s concurrency limit, its weight in the limit shared fairly, its throttle or its rate limit. @default concurrency',
    }),
  })
  .strict();

/** `GET /types/{type}/keys`: the keys of a type's limits that one read can list. */
export const typeKeysSchema = z.object({
  type: z.string(),
  limits: z.array(
    z.object({
      index: z.int().min(0),
      keyed: z.boolean().meta({ description: 'A keyed limit: its keys are not listed (look one up by its value)' }),
      fair: z.boolean().optional().meta({ description: 'A limit shared fairly: `keys` are its fair keys' }),
      limit: z.int().min(1).optional().meta({ description: 'The limit that holds (an unkeyed limit)' }),
      running: z.int().min(0).optional(),
      waiting: z.int().min(0).optional(),
      keys: z
        .array(fairKeySchema)
        .meta({ description: 'For a limit shared fairly: the keys that run, wait, or have a weight set' }),
    }),
  ),
});

/** What `PUT` and `DELETE /types/{type}/keys/{key}/limits` answer. */
export const keyLimitsResponseSchema = z.object({
  type: z.string(),
  key: z.string(),
  limits: z.array(keyLimitSchema),
  handedOn: z
    .array(z.string())
    .meta({ description: 'Waiting jobs the change handed a place to: their messages were sent' }),
  throttle: paceStateSchema.optional().meta({ description: 'When the request set or removed the key’s throttle' }),
  rateLimit: paceStateSchema.optional().meta({ description: 'When the request set or removed the key’s rate limit' }),
});

export const keyStateSchema = z.object({
  type: z.string(),
  key: z.string(),
  limits: z.array(keyLimitSchema),
  singleton: z
    .object({
      scope: z.string().meta({ description: "The singleton's scope (shared by every type that names it)" }),
      mode: z.enum(['skip', 'queue', 'cancel-running']),
      key: z.string().meta({ description: 'The key value (`*`: the singleton has one key for its whole scope)' }),
      running: z
        .array(z.object({ jobId: z.string(), since: isoTime }))
        .meta({ description: 'The job holding the key (of any type in the scope), if any' }),
      waiting: z.int().min(0).meta({ description: 'Jobs waiting for the key (mode `queue` or `cancel-running`)' }),
    })
    .optional()
    .meta({ description: 'Only for a job type with a singleton' }),
  throttle: paceStateSchema.optional().meta({ description: 'Only for a throttled job type' }),
  rateLimit: paceStateSchema.optional().meta({ description: 'Only for a rate-limited job type' }),
  debounce: z
    .object({
      key: z.string(),
      periodSeconds: z.int().min(1),
      maxWaitSeconds: z.int().min(1).optional(),
      run: z.string().optional().meta({ description: "The open window's pending run (absent: no window open)" }),
      since: isoTime.optional().meta({ description: 'When the open window began' }),
    })
    .optional()
    .meta({ description: 'Only for a debounced job type' }),
});

// ---------------------------------------------------------------- the schemas match the code's types

type Equal<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Assert<T extends true> = T;
type Keys<T> = keyof T;

/** Fails to compile when JobView (or JobSummary, AttemptError, JobProgress) gains or loses a field. */
export type SchemaMatchesTypes = [
  Assert<Equal<Keys<JobView>, Keys<z.output<typeof jobViewSchema>>>>,
  Assert<z.output<typeof jobViewSchema> extends JobView ? true : false>,
  Assert<Equal<z.output<typeof jobSummarySchema>, JobSummary>>,
  Assert<Equal<Keys<AttemptError>, Keys<z.output<typeof attemptErrorSchema>>>>,
  Assert<Equal<Keys<ScheduleView>, Keys<z.output<typeof scheduleViewSchema>>>>,
  Assert<Equal<Keys<JobProgress>, Keys<z.output<typeof jobProgressSchema>>>>,
];

/** The body of `POST /jobs/{id}/rerun`. */
export const rerunRequestSchema = z
  .object({
    fromStep: z.string().min(1).max(200).optional().meta({
      description:
        "The name of a recorded journal entry (a step, an emit's `emit:<event>`, a sleep, a signal or event wait, an invoke; the step of that name when the journal holds one, as names are unique per kind only): the entries recorded before it are kept, it and every later one dropped. @default the job runs again from the start (nothing kept)",
    }),
    // a JSON object, as an enqueue's payload must be (enqueueRequestSchema), whatever the type's schema takes
    payload: z.record(z.string(), z.unknown(), 'must be a JSON object').optional().meta({
      description:
        "A corrected payload, validated as an enqueue's (a JSON object, the type's schema, 256 KiB); it must give the concurrency, singleton and throttle keys the job has. @default the job's payload",
    }),
  })
  .strict();

/** The body of `POST /jobs/{id}/signals/{name}`. */
export const signalRequestSchema = z
  .object({
    payload: z.unknown().optional().meta({
      description:
        "Any JSON value (≤ 64 KiB); validated against the job type's schema for the signal when it declares one. @default null",
    }),
  })
  .strict();

/** What `POST /jobs/{id}/signals/{name}` answers. */
export const signalReceiptSchema = z.object({
  jobId: z.string(),
  signal: z.string(),
  receivedAt: isoTime.meta({ description: "When the signal was stored (the first send's, for a replay)" }),
  resumed: z
    .boolean()
    .meta({ description: 'The job was waiting for this signal: it is due now, and its message was sent' }),
  late: z.boolean().meta({
    description:
      "The job's wait for this signal had already timed out (its outcome was recorded first): no wait returns " +
      'this signal, and the job was not woken. `false`: the wait returns it (now if `resumed`, else when the job waits for it)',
  }),
  duplicate: z
    .boolean()
    .meta({ description: 'A replay of a send already stored (same payload): nothing new was stored' }),
});

/** `POST /uploads`: where to PUT a large payload, and the reference to enqueue it by. */
export const uploadResponseSchema = z
  .object({
    ref: z.string().meta({ description: 'The upload\'s reference: enqueue with `{ "type", "payloadRef": ref }`' }),
    url: z.string().meta({ description: "A presigned S3 URL: PUT the payload's JSON (a JSON object) to it" }),
    method: z.literal('PUT'),
    headers: z.record(z.string(), z.string()).meta({ description: 'Headers to send with the PUT' }),
    expiresAt: z.iso.datetime().meta({ description: 'After this the URL is refused' }),
    maxBytes: z.int().meta({ description: 'Largest payload an enqueue accepts from an upload (16 MiB)' }),
  })
  .meta({ id: 'Upload' });
