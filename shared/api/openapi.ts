import * as z from 'zod';
import { enqueueRequestSchema } from '../core/enqueue';
import { scheduleRequestSchema, scheduleUpdateSchema } from '../schedules/request';
import { eventBatchViewSchema, eventJobsSchema, eventsRequestDocSchema, eventViewSchema } from './events-service';
import { flowRequestSchema } from './flows-service';
import { invokedPageSchema } from './invoked-service';
import {
  attemptErrorSchema,
  batchItemResultSchema,
  batchRequestDocSchema,
  batchResponseSchema,
  bulkRequestSchema,
  bulkResponseSchema,
  bulkResultSchema,
  deadLetterSchema,
  dlqPeekSchema,
  dlqQuerySchema,
  errorSchema,
  flowViewSchema,
  jobPageSchema,
  jobProgressSchema,
  jobStateSchema,
  jobSummarySchema,
  jobViewSchema,
  keyLimitsQuerySchema,
  keyLimitsRequestSchema,
  keyLimitsResponseSchema,
  keyStateSchema,
  lastRedriveSchema,
  listQueryDocSchema,
  overviewBucketSchema,
  overviewQuerySchema,
  overviewSchema,
  overviewTypeSchema,
  redriveRequestSchema,
  redriveResultSchema,
  rerunRequestSchema,
  runScheduleRequestSchema,
  runScheduleResponseSchema,
  scheduleListQuerySchema,
  schedulePageSchema,
  scheduleViewSchema,
  signalReceiptSchema,
  signalRequestSchema,
  typeKeysSchema,
  uploadResponseSchema,
} from './schemas';
import { timelinePageSchema } from './timeline-service';

/**
 * The OpenAPI 3.1 document of the HTTP API, generated from the zod schemas that validate
 * requests and describe responses (`schemas.ts`, `core/enqueue.ts`): there is no hand-written
 * copy of any schema. Add an endpoint by adding an {@link ApiOperation} to {@link OPERATIONS}.
 */

type JsonSchema = Record<string, unknown>;

export interface ApiOperation {
  method: 'get' | 'post' | 'put' | 'delete' | 'patch';
  /** OpenAPI path template, e.g. `/jobs/{id}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  /** Path parameters: name → description (all strings). */
  pathParams?: Record<string, string>;
  /** Query parameters: one per property of this object schema (strings on the wire). */
  query?: z.ZodObject;
  /** Optional request headers: name → description. */
  headerParams?: Record<string, string>;
  /** JSON request body. */
  body?: z.ZodType;
  /** Whether the body may be left out. @default false */
  bodyOptional?: boolean;
  /** Status → description and, for a JSON body, its schema. 4xx/5xx default to the error shape. */
  responses: Record<string, { description: string; schema?: z.ZodType }>;
}

/** Component names of the schemas that are referenced by `$ref`. Requests are converted as input, responses as output. */
const REQUEST_COMPONENTS: [string, z.ZodType][] = [
  ['EnqueueRequest', enqueueRequestSchema],
  ['BatchRequest', batchRequestDocSchema],
  ['FlowRequest', flowRequestSchema],
  ['RedriveRequest', redriveRequestSchema],
  ['ScheduleRequest', scheduleRequestSchema],
  ['ScheduleUpdate', scheduleUpdateSchema],
  ['BulkRequest', bulkRequestSchema],
  ['RunScheduleRequest', runScheduleRequestSchema],
  ['KeyLimitsRequest', keyLimitsRequestSchema],
];
const RESPONSE_COMPONENTS: [string, z.ZodType][] = [
  ['JobState', jobStateSchema],
  ['AttemptError', attemptErrorSchema],
  ['JobProgress', jobProgressSchema],
  ['JobView', jobViewSchema],
  ['FlowView', flowViewSchema],
  ['JobSummary', jobSummarySchema],
  ['JobPage', jobPageSchema],
  ['Error', errorSchema],
  ['BatchItemResult', batchItemResultSchema],
  ['BatchResult', batchResponseSchema],
  ['DeadLetter', deadLetterSchema],
  ['LastRedrive', lastRedriveSchema],
  ['DlqPeek', dlqPeekSchema],
  ['RedriveResult', redriveResultSchema],
  ['ScheduleView', scheduleViewSchema],
  ['SchedulePage', schedulePageSchema],
  ['KeyState', keyStateSchema],
  ['KeyLimits', keyLimitsResponseSchema],
  ['BulkItemResult', bulkResultSchema],
  ['BulkResult', bulkResponseSchema],
  ['OverviewBucket', overviewBucketSchema],
  ['TypeOverview', overviewTypeSchema],
  ['Overview', overviewSchema],
  ['RunScheduleResult', runScheduleResponseSchema],
  ['Upload', uploadResponseSchema],
];

const jobIdParam = { id: 'The job id' };
// every operation but GET /openapi.json checks the caller's grants: 403 is always possible
const errors = (...statuses: string[]) =>
  Object.fromEntries(
    ['403', ...statuses].sort().map((status) => [status, { description: ERROR_DESCRIPTIONS[status] ?? 'Error' }]),
  );
const ERROR_DESCRIPTIONS: Record<string, string> = {
  '400':
    'Invalid request (`validation_failed`, `unknown_type`, `invalid_payload`, `invalid_concurrency_key`, `invalid_priority`, `invalid_key`, `invalid_limits`, `malformed_json`, `malformed_body`, `invalid_cursor`, `invalid_payload_ref`, `payload_ref_not_found`, `payload_ref_too_large`, `payload_ref_unsupported`)',
  '403':
    "The caller's grants do not allow this call (`forbidden`, with the `action`, a control call's `control` and the first job `type` not granted); nothing was written. See docs/security.md",
  '404':
    'Not found (`job_not_found`, `type_not_found`, `schedule_not_found`, `no_flow_control`, `dlq_not_found`, `route_not_found`)',
  '409': 'Conflict (`id_conflict`, `illegal_state` with the current `state`, `type_not_deployed`)',
  '413': 'Body too large (`payload_too_large`, with `limitBytes`)',
  '415': 'Content-Type is not JSON (`unsupported_media_type`)',
  '429': 'AWS throttled the request (`throttled`); retry after the `retry-after` header',
  '503': 'A dependency failed (`dependency_failed`); retry',
};

const scheduleNameParam = { name: 'The schedule name' };

export const OPERATIONS: ApiOperation[] = [
  {
    method: 'post',
    path: '/schedules',
    operationId: 'createSchedule',
    summary: 'Create a recurring schedule',
    description:
      'Exactly one of `cron` (5-field Unix or AWS `cron(...)`) and `rate`. Idempotent by name and definition.',
    body: scheduleRequestSchema,
    responses: {
      '201': { description: 'Created', schema: scheduleViewSchema },
      '200': { description: 'The schedule existed with the same definition', schema: scheduleViewSchema },
      ...errors('400', '409', '415', '429', '503'),
    },
  },
  {
    method: 'get',
    path: '/schedules',
    operationId: 'listSchedules',
    summary: 'List recurring schedules',
    query: scheduleListQuerySchema,
    responses: {
      '200': { description: 'A page of schedules', schema: schedulePageSchema },
      ...errors('400', '429', '503'),
    },
  },
  {
    method: 'get',
    path: '/schedules/{name}',
    operationId: 'getSchedule',
    summary: 'Get a recurring schedule',
    pathParams: scheduleNameParam,
    responses: { '200': { description: 'The schedule', schema: scheduleViewSchema }, ...errors('404', '429', '503') },
  },
  {
    method: 'put',
    path: '/schedules/{name}',
    operationId: 'updateSchedule',
    summary: 'Replace a recurring schedule definition',
    pathParams: scheduleNameParam,
    body: scheduleUpdateSchema,
    responses: {
      '200': { description: 'The updated schedule', schema: scheduleViewSchema },
      ...errors('400', '404', '409', '415', '429', '503'),
    },
  },
  {
    method: 'delete',
    path: '/schedules/{name}',
    operationId: 'deleteSchedule',
    summary: 'Delete a recurring schedule (runs already created are kept)',
    pathParams: scheduleNameParam,
    responses: { '204': { description: 'Deleted' }, ...errors('404', '429', '503') },
  },
  {
    method: 'post',
    path: '/schedules/{name}/pause',
    operationId: 'pauseSchedule',
    summary: 'Pause a recurring schedule: no fires until resumed',
    pathParams: scheduleNameParam,
    responses: {
      '200': { description: 'The paused schedule', schema: scheduleViewSchema },
      ...errors('404', '409', '429', '503'),
    },
  },
  {
    method: 'post',
    path: '/schedules/{name}/resume',
    operationId: 'resumeSchedule',
    summary: 'Resume a paused schedule from its next fire time',
    pathParams: scheduleNameParam,
    responses: {
      '200': { description: 'The resumed schedule', schema: scheduleViewSchema },
      ...errors('404', '409', '429', '503'),
    },
  },
  {
    method: 'post',
    path: '/schedules/{name}/run',
    operationId: 'runSchedule',
    summary: 'Run a recurring schedule now: enqueue one job of its type, payload and maxAttempts',
    description:
      'Paused schedules can be run too; the schedule is not changed. The job id is the body `id`, else ' +
      '`<name>.now.<hash of the Idempotency-Key>` (the same key gives the same job: a retried request answers ' +
      '200 with it instead of creating a second), else random. 404 `schedule_not_found`.',
    pathParams: scheduleNameParam,
    headerParams: {
      'Idempotency-Key': 'Up to 255 printable ASCII characters; requests with the same key run the schedule once',
    },
    body: runScheduleRequestSchema,
    bodyOptional: true,
    responses: {
      '201': { description: 'The job, enqueued', schema: runScheduleResponseSchema },
      '200': { description: 'The job of an earlier request with the same id', schema: runScheduleResponseSchema },
      ...errors('400', '404', '409', '413', '415', '429', '503'),
    },
  },
  {
    method: 'get',
    path: '/overview',
    operationId: 'overview',
    summary: 'Per deployed type: counts by state, a series, DLQ depth, oldest queued age',
    description:
      'Counts and series cover the jobs created in the window, at most 100 per shard (800 per type) read from ' +
      'the `byType` index (never a scan); `countsScope` says what was counted and whether it was truncated. ' +
      "Succeeded and failed are bucketed by `finishedAt`. `dlqDepth` is the DLQ's ApproximateNumberOfMessages.",
    query: overviewQuerySchema,
    responses: {
      '200': { description: 'The overview', schema: overviewSchema },
      ...errors('400', '429', '503'),
    },
  },
  {
    method: 'post',
    path: '/jobs/bulk',
    operationId: 'bulkJobs',
    summary: 'Retry or cancel up to 100 jobs',
    description:
      'Each id as `POST /jobs/{id}/retry` or `/cancel`, 8 at a time; one result per id, in order: `applied` ' +
      '(with the state after), `refused` (with the state that refused it), `not_found`. 400 (nothing done) when ' +
      'the ids are not 1 to 100 unique job ids or the action is unknown.',
    body: bulkRequestSchema,
    responses: {
      '200': { description: 'One result per id', schema: bulkResponseSchema },
      ...errors('400', '415', '429', '503'),
    },
  },
  {
    method: 'post',
    path: '/jobs',
    operationId: 'enqueueJob',
    summary: 'Enqueue a job',
    description: 'Idempotent by `id`: the same id and payload answer 200 with the stored job.',
    body: enqueueRequestSchema,
    responses: {
      '201': { description: 'Created', schema: jobViewSchema },
      '200': { description: 'The job existed with the same type and payload', schema: jobViewSchema },
      ...errors('400', '409', '413', '415', '429', '503'),
    },
  },
  {
    method: 'post',
    path: '/uploads',
    operationId: 'createUpload',
    summary: 'Get a presigned PUT for a large payload',
    description:
      'For a payload over the 6 MB a Function URL request takes: PUT its JSON to `url` before `expiresAt`, then ' +
      'enqueue with `payloadRef` set to `ref` instead of `payload`. Granted as `enqueue`. A deployment ' +
      'without a payload bucket answers 404 `not_configured`. See docs/payloads.md.',
    responses: {
      '201': { description: 'Where to upload, and the reference', schema: uploadResponseSchema },
      ...errors('404', '429', '503'),
    },
  },
  {
    method: 'get',
    path: '/jobs',
    operationId: 'listJobs',
    summary: 'List jobs, newest first',
    description:
      'Reads the sharded GSIs (never a table scan). Without `type`, lists every deployed type. ' +
      'Follow `nextCursor` until it is null; a page may hold fewer than `limit` jobs.',
    query: listQueryDocSchema,
    responses: {
      '200': { description: 'A page of job summaries', schema: jobPageSchema },
      ...errors('400', '429', '503'),
    },
  },
  {
    method: 'get',
    path: '/jobs/{id}',
    operationId: 'getJob',
    summary: 'Get a job',
    pathParams: jobIdParam,
    responses: { '200': { description: 'The job', schema: jobViewSchema }, ...errors('404', '429', '503') },
  },
  {
    method: 'get',
    path: '/jobs/{id}/invoked',
    operationId: 'listInvoked',
    summary: 'The jobs a job invoked (`ctx.invoke`), with their states',
    description:
      "Read from the job's journal (its `invoke#` entries), 100 a page in the order of the invokes; one read of each " +
      'job on the page. Jobs of types the caller may not read are left out. 404 `job_not_found` when the job is not stored.',
    pathParams: jobIdParam,
    query: z.object({ cursor: z.string().optional().meta({ description: "A previous page's `nextCursor`" }) }),
    responses: {
      '200': { description: 'A page of invoked jobs', schema: invokedPageSchema },
      ...errors('400', '404', '429', '503'),
    },
  },
  {
    method: 'get',
    path: '/jobs/{id}/timeline',
    operationId: 'getTimeline',
    summary: "A job's run: its attempts, and its journal's steps, sleeps, waits and invokes",
    description:
      "Read from the job's item (its attempts) and its journal's current series, 100 entries a page in the order " +
      "they were recorded; one read of each invoked job on the page. A step's start is estimated (the end of what " +
      'came before it). Invokes of jobs of types the caller may not read are left out. Writes nothing. 404 ' +
      '`job_not_found` when the job is not stored.',
    pathParams: jobIdParam,
    query: z.object({ cursor: z.string().optional().meta({ description: "A previous page's `nextCursor`" }) }),
    responses: {
      '200': { description: 'A page of the timeline', schema: timelinePageSchema },
      ...errors('400', '404', '429', '503'),
    },
  },
  {
    method: 'get',
    path: '/types/{type}/keys/{key}',
    operationId: 'getKeyState',
    summary: "The state of a key of a job type's flow control",
    description:
      'For each concurrency limit and the singleton: the jobs holding a slot of this key value (running, or handed a ' +
      'slot and about to start) and how many wait; for a throttle or rate limit, the next start it allows. ' +
      '404 `no_flow_control` for a type without flow control; 400 `invalid_key` for an unusable key.',
    pathParams: { type: 'The job type', key: 'The key value (URL-encoded)' },
    responses: { '200': { description: 'The key', schema: keyStateSchema }, ...errors('400', '404', '429', '503') },
  },
  {
    method: 'get',
    path: '/types/{type}/keys',
    operationId: 'listTypeKeys',
    summary: "The keys of a job type's concurrency limits",
    description:
      'Per concurrency limit: for a limit without a key function, its one key (the limit that holds, running and ' +
      'waiting); for a limit shared fairly (`fairBy`), each fair key that runs, waits or has a weight set, with its ' +
      'share. A keyed limit’s keys are not listed: each is its own item (look one up with GET /types/{type}/keys/{key}). ' +
      'One read per unkeyed limit.',
    pathParams: { type: 'The job type' },
    responses: { '200': { description: 'The keys', schema: typeKeysSchema }, ...errors('404', '429', '503') },
  },
  {
    method: 'put',
    path: '/types/{type}/keys/{key}/limits',
    operationId: 'setKeyLimits',
    summary: "Set a key's concurrency limit or weight at run time",
    description:
      "`concurrency` replaces the spec's concurrency limit for this key value, from the next start: a lowered limit " +
      'lets the running jobs finish; a raised one hands its new places to waiting jobs at once (named in `handedOn`). ' +
      '`weight` sets the key’s weight in the type’s limit shared fairly (`fairBy`), from the next hand-on. Throttles ' +
      'and rate limits cannot be set. The request is checked whole before anything is written: 400 `invalid_limits` ' +
      'names the field (a type without concurrency limits, or without a fair limit for `weight`, a bad `limit` index, ' +
      'a key other than `*` for a limit without a key function, a value out of range). Costs 1 write unit per field ' +
      '(a weight grows the fair slot’s item by about 10 bytes plus the key), plus the hand-on. Access: `operate`.',
    pathParams: { type: 'The job type', key: 'The key value (URL-encoded; `*` for a limit without a key function)' },
    body: keyLimitsRequestSchema,
    responses: {
      '200': { description: "The key's limits as they hold now", schema: keyLimitsResponseSchema },
      ...errors('400', '404', '429', '503'),
    },
  },
  {
    method: 'delete',
    path: '/types/{type}/keys/{key}/limits',
    operationId: 'clearKeyLimits',
    summary: "Remove a key's run-time concurrency limit or weight",
    description:
      "The spec's limit holds again, from the next start (a spec above the removed limit hands places on at once). " +
      'Query `limit`: the index of the limit, as in the PUT; `field=weight` removes the key’s weight instead (the ' +
      'spec’s `weight` holds again). Access: `operate`.',
    pathParams: { type: 'The job type', key: 'The key value (URL-encoded; `*` for a limit without a key function)' },
    query: keyLimitsQuerySchema,
    responses: {
      '200': { description: "The key's limits as they hold now", schema: keyLimitsResponseSchema },
      ...errors('400', '404', '429', '503'),
    },
  },
  {
    method: 'post',
    path: '/jobs/batch',
    operationId: 'enqueueJobs',
    summary: 'Enqueue up to 100 jobs',
    description:
      'Each job is validated, deduplicated and written on its own; the answer is 200 with one result per job, ' +
      'in order. 400 only when the body is not `{ "jobs": [...] }` with 1 to 100 items. Body limit 5 MiB. ' +
      'Also served as `POST /jobs:batch`.',
    body: batchRequestDocSchema,
    responses: {
      '200': { description: 'One result per job', schema: batchResponseSchema },
      ...errors('400', '413', '415'),
    },
  },
  {
    method: 'post',
    path: '/flows',
    operationId: 'createFlow',
    summary: 'Enqueue a DAG of up to 100 jobs, all or nothing',
    description:
      'Each job is an enqueue request with a required `id`; `dependsOn` names jobs of the flow or existing jobs. ' +
      'The whole flow is checked before anything is written: a cycle (400 `flow_cycle`), an unknown parent ' +
      '(400 `unknown_parent`), a duplicate id (400 `duplicate_node`), a bad policy or any invalid job writes ' +
      'nothing, and the issue names the job (`jobs.<i>...`). 201 when created; 200 for a replay of the same flow.',
    body: flowRequestSchema,
    responses: {
      '201': { description: 'The flow, created', schema: flowViewSchema },
      '200': { description: 'The flow, written before (a replay)', schema: flowViewSchema },
      ...errors('400', '409', '413', '415', '429', '503'),
    },
  },
  {
    method: 'post',
    path: '/events',
    operationId: 'sendEvents',
    summary: 'Send an event (or up to 100): each subscribed job type gets one job',
    description:
      'Body: one event `{ name, id?, data }`, or `{ events: [...] }` with 1 to 100. Each event makes one job per job type ' +
      "that subscribes to it (`on` in its spec) and whose filter takes it, under an id derived from the event's id and " +
      'the type: the same event sent again makes nothing new (`status: existing`). The whole request is checked before ' +
      'anything is written: an event no type subscribes to (400 `unknown_event`), data that does not match its schema ' +
      '(400 `invalid_event_data`), a job payload its type refuses, or one event (name and id) twice (400 `duplicate_event`) writes nothing. ' +
      'A 2xx means every job is written and handed on (sent, or in its line); on a 409 or 5xx, send the same request again. Access: `enqueue` on ' +
      'every type that subscribes to an event named. Body limit 5 MiB.',
    body: eventsRequestDocSchema,
    responses: {
      '200': {
        description: 'The event and its jobs (a batch: `{ events: [...] }`, in order)',
        schema: z.union([eventViewSchema, eventBatchViewSchema]),
      },
      ...errors('400', '409', '413', '415', '429', '503'),
    },
  },
  {
    method: 'get',
    path: '/events/{id}',
    operationId: 'getEvent',
    summary: 'The jobs an event made',
    description:
      'One read per event name and job type that subscribes to it (the job ids are derived; the event itself is not stored), ' +
      'limited to the types the caller may read. 404 `event_not_found` when none exists.',
    pathParams: { id: 'The event id' },
    responses: { '200': { description: "The event's jobs", schema: eventJobsSchema }, ...errors('404', '429', '503') },
  },
  {
    method: 'get',
    path: '/flows/{id}',
    operationId: 'getFlow',
    summary: "A flow's graph and each job's state",
    pathParams: { id: 'The flow id' },
    responses: { '200': { description: 'The flow', schema: flowViewSchema }, ...errors('404', '429', '503') },
  },
  {
    method: 'post',
    path: '/jobs/{id}/cancel',
    operationId: 'cancelJob',
    summary: 'Cancel a job that has not finished',
    description:
      'scheduled, queued, retrying, waiting, running or held → cancelled. A running attempt loses its lease: its handler ' +
      "is aborted at its next heartbeat and it is not retried. A cancelled job releases its dependants by their edges' " +
      'policies (a held one too: holding kept them waiting). A finished job answers 409 `illegal_state`.',
    pathParams: jobIdParam,
    responses: {
      '200': { description: 'The cancelled job', schema: jobViewSchema },
      ...errors('404', '409', '429', '503'),
    },
  },
  {
    method: 'post',
    path: '/jobs/{id}/retry',
    operationId: 'retryJob',
    summary: 'Retry a held, failed, cancelled or expired job',
    description:
      'Starts a new series of attempts (attempts 0, `retries` + 1, error history kept) and queues it now. A held job ' +
      '(its replay diverged from its journal, reason `nondeterministic`) replays its journal again: retry it after ' +
      'deploying code that matches it; see docs/workflows.md "Changing code safely".',
    pathParams: jobIdParam,
    responses: {
      '200': { description: 'The queued job', schema: jobViewSchema },
      ...errors('404', '409', '429', '503'),
    },
  },
  {
    method: 'post',
    path: '/jobs/{id}/rerun',
    operationId: 'rerunJob',
    summary: 'Rerun a job that ended from a step, with a corrected payload',
    description:
      'A held, failed, cancelled, expired or succeeded job runs again as a new series of attempts of the same job (as a ' +
      'retry), on a new series of its journal that keeps the entries recorded before `fromStep` (none without it): ' +
      'those steps are not run again; that step and every later entry run again. A corrected `payload` is validated ' +
      "as an enqueue's. An unknown `fromStep` answers 400 `unknown_step` (field `fromStep`), a bad payload 400 " +
      '`invalid_payload` or `keys_changed` (field `payload`), with nothing written; a job that has not ended, 409 ' +
      '`illegal_state`. Costs 1 write unit per kept entry (per KB) + 2 for the restart (+1 `byTypeState` for a ' +
      'held, failed, cancelled or expired job); see docs/workflows.md "Rerun from a step".',
    pathParams: jobIdParam,
    body: rerunRequestSchema,
    bodyOptional: true,
    responses: {
      '200': { description: 'The queued job', schema: jobViewSchema },
      ...errors('400', '404', '409', '413', '429', '503'),
    },
  },
  {
    method: 'post',
    path: '/jobs/{id}/signals/{name}',
    operationId: 'signalJob',
    summary: 'Send a signal to a job',
    description:
      "Puts the signal in the job's inbox: a handler waiting for it (`ctx.waitForSignal(name)`) resumes now, and one " +
      'that waits for it later gets it at once. A signal accepted is either returned by the wait, or came after ' +
      'the wait had recorded its timeout: then the answer says `late: true`, and the job is not woken. One signal ' +
      'per name and job: the same payload again answers 200 (`duplicate`), another payload 409 `signal_exists`. A ' +
      'finished job answers 409 `job_finished`; a name or payload the job type does not declare, 400 ' +
      '(`unknown_signal`, `invalid_payload`); a name starting `event:` (the reserved signal of an event wait), 400 ' +
      '`reserved_signal`. Costs 2 write units (the inbox, and the outcome of the wait), and 1 ' +
      'more when it wakes the job.',
    pathParams: { ...jobIdParam, name: 'The signal name: 1-200 printable characters without "#"' },
    body: signalRequestSchema,
    bodyOptional: true,
    responses: {
      '202': {
        description: 'Stored; `resumed` says whether the job was waiting for it, `late` whether its wait had timed out',
        schema: signalReceiptSchema,
      },
      '200': { description: 'A replay of a signal already stored', schema: signalReceiptSchema },
      ...errors('400', '404', '409', '413', '415', '429', '503'),
    },
  },
  {
    method: 'get',
    path: '/types/{type}/latest',
    operationId: 'latestJob',
    summary: 'The most recent job of a type',
    pathParams: { type: 'A deployed job type' },
    responses: { '200': { description: 'The newest job', schema: jobViewSchema }, ...errors('404', '429', '503') },
  },
  {
    method: 'get',
    path: '/dlq',
    operationId: 'peekDeadLetters',
    summary: "Look at a job type's dead-letter queue",
    description:
      "Up to 10 messages, received with visibility 0 (left in the queue), and the type's last redrive (one DynamoDB GetItem).",
    query: dlqQuerySchema,
    responses: {
      '200': { description: 'Messages, depth and the last redrive', schema: dlqPeekSchema },
      ...errors('400', '404', '429', '503'),
    },
  },
  {
    method: 'post',
    path: '/dlq/redrive',
    operationId: 'redriveDeadLetters',
    summary: "Move a job type's dead-letter messages back to its ready queue",
    description:
      'Starts an SQS message move task (202). Where SQS has none (emulators), the API moves up to ' +
      '`maxMessages` itself (200): each is sent to the ready queue first and deleted from the DLQ only after. ' +
      "A redrive that started a task or moved messages is recorded as the type's last (one DynamoDB PutItem, " +
      'after the move; a failed record is logged and fails nothing): `GET /dlq` answers it.',
    body: redriveRequestSchema,
    responses: {
      '202': { description: 'A message move task started or is running', schema: redriveResultSchema },
      '200': { description: 'Messages moved by the API', schema: redriveResultSchema },
      ...errors('400', '404', '409', '415', '429', '503'),
    },
  },
  {
    method: 'get',
    path: '/openapi.json',
    operationId: 'openApi',
    summary: 'This document',
    responses: { '200': { description: 'OpenAPI 3.1' } },
  },
];

function strip(schema: JsonSchema): JsonSchema {
  const { $schema: _s, $id: _i, ...rest } = schema;
  return rest;
}

/** JSON Schemas of the named components; references between them become `#/components/schemas/<name>`. */
function components(entries: [string, z.ZodType][], io: 'input' | 'output'): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of entries) registry.add(schema, { id });
  const out = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'any',
    uri: (id) => `#/components/schemas/${id}`,
  }) as { schemas: Record<string, JsonSchema> };
  return Object.fromEntries(Object.entries(out.schemas).map(([id, schema]) => [id, strip(schema)]));
}

function refOrInline(schema: z.ZodType, entries: [string, z.ZodType][], io: 'input' | 'output'): JsonSchema {
  const named = entries.find(([, s]) => s === schema);
  if (named) return { $ref: `#/components/schemas/${named[0]}` };
  return strip(z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as JsonSchema);
}

/** Builds the document for `operations` (default: every endpoint of this API). */
export function buildOpenApiDocument(operations: readonly ApiOperation[] = OPERATIONS): JsonSchema {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of operations) {
    const parameters: unknown[] = [];
    for (const [name, description] of Object.entries(op.pathParams ?? {})) {
      parameters.push({ name, in: 'path', required: true, description, schema: { type: 'string' } });
    }
    for (const [name, description] of Object.entries(op.headerParams ?? {})) {
      parameters.push({ name, in: 'header', required: false, description, schema: { type: 'string' } });
    }
    if (op.query) {
      const shape = op.query.shape as Record<string, z.ZodType>;
      const inputSchema = refOrInline(op.query, [], 'input');
      const required = new Set((inputSchema.required as string[] | undefined) ?? []);
      const properties = (inputSchema.properties ?? {}) as Record<string, JsonSchema>;
      for (const name of Object.keys(shape)) {
        const { description, ...schema } = properties[name] ?? {};
        parameters.push({
          name,
          in: 'query',
          required: required.has(name),
          ...(typeof description === 'string' ? { description } : {}),
          schema,
        });
      }
    }
    const responses: Record<string, unknown> = {};
    for (const [status, response] of Object.entries(op.responses)) {
      const schema = response.schema ?? (Number(status) >= 400 ? errorSchema : undefined);
      responses[status] = {
        description: response.description,
        ...(schema
          ? { content: { 'application/json': { schema: refOrInline(schema, RESPONSE_COMPONENTS, 'output') } } }
          : {}),
      };
    }
    paths[op.path] ??= {};
    (paths[op.path] as Record<string, unknown>)[op.method] = {
      operationId: op.operationId,
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(op.body
        ? {
            requestBody: {
              required: op.bodyOptional !== true,
              content: { 'application/json': { schema: refOrInline(op.body, REQUEST_COMPONENTS, 'input') } },
            },
          }
        : {}),
      responses,
      security: [{ sigv4: [] }],
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Orrery API',
      version: '1',
      description:
        'Serverless job platform on AWS. Every error has the shape `{ "error": { "code", "message", "issues"? } }`.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    paths,
    components: {
      schemas: { ...components(REQUEST_COMPONENTS, 'input'), ...components(RESPONSE_COMPONENTS, 'output') },
      securitySchemes: {
        sigv4: {
          type: 'apiKey',
          in: 'header',
          name: 'Authorization',
          description: 'AWS Signature Version 4, service `lambda` (Function URL with AWS_IAM auth)',
        },
      },
    },
  };
}

let cached: JsonSchema | undefined;

/** The document for this API, built once per process. */
export function openApiDocument(): JsonSchema {
  cached ??= buildOpenApiDocument();
  return cached;
}
