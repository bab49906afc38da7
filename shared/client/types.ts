/**
 * The HTTP contract as the client sees it, and the compile-time link between job type names
 * and their payloads.
 */

import type { z } from 'zod';
import type { eventJobsSchema, eventViewSchema } from '../api/events-service';
import type { invokedPageSchema } from '../api/invoked-service';
import type {
  batchItemResultSchema,
  bulkResultSchema,
  deadLetterSchema,
  dlqPeekSchema,
  flowViewSchema,
  jobSummarySchema,
  keyLimitsResponseSchema,
  keyStateSchema,
  overviewSchema,
  redriveResultSchema,
  typeKeysSchema,
} from '../api/schemas';
import type { timelineEntrySchema, timelinePageSchema } from '../api/timeline-service';
import type { BackoffInput } from '../core/backoff';
import type { JobView } from '../core/job';
import type { DeclaresSignals, JobTypeSpec, SignalSchemas } from '../core/job-type';
import type { JobState } from '../core/states';
import type { scheduleRequestSchema } from '../schedules/request';
import type { Upload, UploadRef } from './upload';

export type { AttemptError, JobProgress, JobView } from '../core/job';
export type { SignalReceipt } from '../core/journal';
export type { JobCost } from '../core/metrics';
export type { JobState } from '../core/states';

// ---------------------------------------------------------------------------------------------
// Job types known at compile time
// ---------------------------------------------------------------------------------------------

/**
 * A job type with its handler, as `defineJob` returns it: besides the spec, it gives the client
 * the type of what the handler returns. Structural, so the client does not depend on the runtime.
 */
export interface DefinedJob<Spec extends JobTypeSpec = JobTypeSpec, Result = unknown> {
  readonly spec: Spec;
  run(payload: never, ctx: never): Promise<Result>;
}

/** One job type of a {@link JobCatalog}: its spec, or its definition (spec and handler). */
export type JobCatalogEntry = JobTypeSpec | DefinedJob;

/**
 * Job types the client knows at compile time: the catalog tuple of specs
 * (`functions/jobs/catalog.ts`'s `catalog`), or a record from type name to spec
 * (`{ echo: echoJob, flaky: flakyJob }`). Definitions (`defineJob`'s results) may stand in for
 * specs: the client then also types each job's `result` by what its handler returns.
 *
 * The tuple form takes each name from the spec's `type` property, so it needs specs whose
 * `type` is a string literal; with `type: string` every name is accepted and payloads are
 * the union of all schemas. The record form takes names from its keys and works with any spec.
 */
export type JobCatalog = readonly JobCatalogEntry[] | { readonly [type: string]: JobCatalogEntry };

type SpecOf<E> = E extends { readonly spec: infer S } ? S : E;

type EntriesByName<C extends JobCatalog> = C extends readonly JobCatalogEntry[]
  ? { [E in C[number] as SpecOf<E> extends { readonly type: infer N extends string } ? N : never]: E }
  : C;

/** Any signal name, any payload: a type that declares no `signals`. */
export type AnySignalPayloads = { [name: string]: unknown };

/**
 * Type name → what the client knows of it: payload types, input (what `enqueue` takes) and output
 * (what the API stores and returns); the stored `result` (see {@link StoredResult}), when the
 * client was given the handler; the payload each signal takes, when the type declares `signals`.
 */
export type JobTypeMap = {
  [type: string]: { input: unknown; output: unknown; result?: unknown; signals?: AnySignalPayloads };
};

/**
 * What a value becomes through JSON, as a handler's result is stored (`JSON.stringify`): what has
 * a `toJSON` (a Date) becomes what it returns; functions, symbols and `undefined` leave objects
 * (a field that may be `undefined` becomes optional) and are `null` in arrays.
 */
export type Jsonified<T> = 0 extends 1 & T
  ? T // any stays any
  : T extends { toJSON(...args: never): infer J }
    ? Jsonified<J>
    : T extends string | number | boolean | null
      ? T
      : T extends undefined | symbol | bigint | ((...args: never) => unknown)
        ? never
        : T extends readonly unknown[]
          ? { -readonly [I in keyof T]: JsonItem<T[I]> }
          : T extends object
            ? JsonifiedObject<T>
            : unknown;

/** An array item: what JSON drops from an object is `null` in an array. */
type JsonItem<V> = V extends undefined | symbol | ((...args: never) => unknown) ? null : Jsonified<V>;

/** The fields of an object that JSON keeps: a field that may be `undefined` is optional. */
type JsonifiedObject<T> = Flat<
  {
    -readonly [K in keyof T as JsonKey<T, K, false>]: Jsonified<T[K]>;
  } & {
    -readonly [K in keyof T as JsonKey<T, K, true>]?: Jsonified<T[K]>;
  }
>;

/** `K` when JSON keeps it and it may (or may not, `optional: false`) be undefined. */
type JsonKey<T, K extends keyof T, Optional extends boolean> = K extends string
  ? [Jsonified<T[K]>] extends [never]
    ? never
    : (undefined extends T[K] ? true : false) extends Optional
      ? K
      : never
  : never;

type Flat<O> = { [K in keyof O]: O[K] };

/** What a handler returns when it returns nothing (`async () => {}` is typed `Promise<void>`). */
// biome-ignore lint/suspicious/noConfusingVoidType: void is the type of that nothing
type Nothing = undefined | void;

/**
 * A job's `result` for a handler that returns `R`: its JSON, or `null` when it returns nothing
 * (`unknown` when `R` is not known).
 */
export type StoredResult<R> = 0 extends 1 & R
  ? unknown
  : unknown extends R
    ? unknown
    : R extends Nothing
      ? null
      : Jsonified<R>;

type ResultOf<E> = E extends { run(...args: never): Promise<infer R> } ? StoredResult<R> : unknown;

type SignalInputs<Signals extends SignalSchemas> =
  DeclaresSignals<Signals> extends true ? { [N in keyof Signals & string]: z.input<Signals[N]> } : AnySignalPayloads;

/** The {@link JobTypeMap} of a catalog: `z.input`/`z.output` of each spec's payload schema, results, signals. */
export type JobTypesOf<C extends JobCatalog> = {
  [K in keyof EntriesByName<C> & string]: SpecOf<EntriesByName<C>[K]> extends JobTypeSpec<infer S, string, infer Sig>
    ? { input: z.input<S>; output: z.output<S>; result: ResultOf<EntriesByName<C>[K]>; signals: SignalInputs<Sig> }
    : never;
};

/** Without a catalog: any type name, any JSON object as payload. */
export type UntypedJobs = { [type: string]: { input: Record<string, unknown>; output: Record<string, unknown> } };

export type TypeName<T extends JobTypeMap> = keyof T & string;

type ResultField<Info> = Info extends { result: infer R } ? (unknown extends R ? unknown : R | null) : unknown;

/**
 * A job whose type and payload are known; its `result` too (`null` until it succeeded) when the
 * client was given the type's handler.
 */
export type TypedJob<T extends JobTypeMap, K extends TypeName<T>> = Omit<JobView, 'type' | 'payload' | 'result'> & {
  type: K;
  payload: T[K]['output'];
  result: ResultField<T[K]>;
};

/** A job of type `K` that succeeded: its `result` is the handler's (as JSON). */
export type SucceededJob<T extends JobTypeMap, K extends TypeName<T>> = Omit<TypedJob<T, K>, 'state' | 'result'> & {
  state: 'succeeded';
  result: T[K] extends { result: infer R } ? R : unknown;
};

/** What `waitFor(id, states, { type })` returns: a {@link SucceededJob} when it waits for `succeeded` only. */
export type WaitedJob<T extends JobTypeMap, K extends TypeName<T>, S extends JobState> = [S] extends ['succeeded']
  ? SucceededJob<T, K>
  : Omit<TypedJob<T, K>, 'state'> & { state: S };

// ---------------------------------------------------------------------------------------------
// Signals known at compile time
// ---------------------------------------------------------------------------------------------

type SignalsOf<Info> = Info extends { signals: infer S } ? S : AnySignalPayloads;

type DeclaredSignalName<Info> = string extends keyof SignalsOf<Info> ? never : keyof SignalsOf<Info> & string;

type CatalogSignalName<T extends JobTypeMap> = { [K in keyof T]: DeclaredSignalName<T[K]> }[keyof T];

/**
 * The names `signal(id, name, payload)` takes: those the catalog's types declare (`signals`), or
 * any name when none of them declares signals (and without a catalog).
 */
export type SignalName<T extends JobTypeMap> = [CatalogSignalName<T>] extends [never] ? string : CatalogSignalName<T>;

/** The payload of signal `N` (the union, if several types declare `N` with other schemas). */
export type SignalPayload<T extends JobTypeMap, N extends string> = [CatalogSignalName<T>] extends [never]
  ? unknown
  : {
      [K in keyof T]: SignalsOf<T[K]> extends infer S
        ? N extends DeclaredSignalName<T[K]> & keyof S
          ? S[N]
          : never
        : never;
    }[keyof T];

/** The names `signal(id, name, payload, { type: K })` takes: `K`'s declared signals, or any name. */
export type TypeSignalName<T extends JobTypeMap, K extends TypeName<T>> = string extends keyof SignalsOf<T[K]>
  ? string
  : keyof SignalsOf<T[K]> & string;

/** The payload of signal `N` of type `K`. */
export type TypeSignalPayload<T extends JobTypeMap, K extends TypeName<T>, N extends string> =
  SignalsOf<T[K]> extends infer S ? (string extends keyof S ? unknown : N extends keyof S ? S[N] : never) : never;

/** The payload argument of `signal`: optional when the payload may be null (the client sends null then). */
export type SignalPayloadArg<P> = unknown extends P ? [payload?: P] : null extends P ? [payload?: P] : [payload: P];

// ---------------------------------------------------------------------------------------------
// Jobs
// ---------------------------------------------------------------------------------------------

/** Options of one enqueue (everything in `POST /jobs` but `type` and `payload`). */
export interface EnqueueOptions {
  /**
   * Job id, 1–64 of `A-Za-z0-9_.-`; enqueue is idempotent by id.
   * @default a random UUID generated by the client, so a retried request cannot create the job twice
   */
  id?: string;
  /** Run after this many seconds (0 to 366 days). Not with `runAt`. */
  delaySeconds?: number;
  /** Run at this time (≤ 366 days ahead). Not with `delaySeconds`. */
  runAt?: Date | string;
  /** 1–25. @default the job type's (usually 3) */
  maxAttempts?: number;
  /** Backoff between attempts for this job. @default the job type's */
  backoff?: BackoffInput;
  /** Dispatch deadline: a job not started by then ends `expired` without running. @default none */
  dispatchBy?: Date | string;
  /**
   * Key of the job type's first keyed concurrency limit, instead of the one its `key` function
   * computes from the payload (e.g. a tenant id the payload does not carry). 1–256 characters.
   * @default the key from the payload
   */
  concurrencyKey?: string;
  /**
   * Key of the job type's singleton, instead of the one its `key` function computes from the
   * payload. 1–256 characters.
   * @default the key from the payload
   */
  singletonKey?: string;
  /**
   * The job's priority, 0 to 10, higher first: its place in the line of its type's concurrency or
   * singleton limit (a freed slot goes to the best-ranked waiting job; see docs/flow-control.md).
   * Only for a job type with a `priority` option: any other type refuses it (400
   * `invalid_priority`, nothing written), as it does a value that is not an integer 0 to 10.
   * @default the type's `priority.default` (0 unless the spec says otherwise)
   * @example
   * await client.enqueue('render', { page }, { priority: 8 }); // ahead of the waiting priority-0 renders
   */
  priority?: number;
  /**
   * Jobs this one waits for (at most 1,000): it starts once all succeeded. Each is an id, or
   * `{ id, onParentFailure }`: what the job does when that parent fails, is cancelled, expires or
   * is skipped (`fail`: it fails; `cancel`: it is cancelled; `ignore`: the parent counts as done).
   * @default no parents; a parent's policy defaults to `fail`
   * @example
   * await client.enqueue('report', { day }, { dependsOn: ['extract-1', { id: 'extract-2', onParentFailure: 'ignore' }] });
   */
  dependsOn?: (string | { id: string; onParentFailure?: 'fail' | 'ignore' | 'cancel' })[];
}

/** One job of `createFlow`: an enqueue with a required id (unique in the flow); its payload may be an {@link UploadRef}. */
export type FlowJob<T extends JobTypeMap> = {
  [K in TypeName<T>]: { type: K; payload: T[K]['input'] | UploadRef } & EnqueueOptions & { id: string };
}[TypeName<T>];

/** `GET /flows/{id}` and the answer of `POST /flows`: the graph and each job's state. */
export type FlowView = z.output<typeof flowViewSchema>;

/** One event of `sendEvents`. */
export interface EventToSend {
  name: string;
  data: Record<string, unknown>;
  /** Makes a resend safe: the same id makes nothing new. @default a random UUID, kept across the client's retries */
  id?: string;
}

/** The answer of `sendEvent`: the event's id and name, and the job each subscribed type got. */
export type EventView = z.output<typeof eventViewSchema>;

/** `GET /events/{id}`: the jobs the event made. */
export type EventJobs = z.output<typeof eventJobsSchema>;

/** One job of `GET /jobs/{id}/invoked`: an invoke's name, the job it started, its type and state (null once no longer stored). */
export type InvokedJob = z.output<typeof invokedPageSchema>['items'][number];

/**
 * `GET /jobs/{id}/timeline`: the job's attempts and its journal's entries (steps, sleeps, waits,
 * invokes) in the order they were recorded. `client.timeline` gives every page's entries in one.
 */
export type Timeline = z.output<typeof timelinePageSchema>;

/** One entry of a {@link Timeline}: a step, a sleep, a signal or event wait, or an invoke. */
export type TimelineEntry = z.output<typeof timelineEntrySchema>;

export interface EnqueueResult<J = JobView> {
  /** False when a job with this id already existed with the same type and payload (a replay). */
  created: boolean;
  job: J;
  /** The upload the payload went through, when `enqueue` uploaded it (see `autoUpload`). */
  upload?: Upload;
}

/** Options of `client.enqueue`: an enqueue's, and how a large payload is sent. */
export interface EnqueueCallOptions extends EnqueueOptions {
  /**
   * Upload a payload too large for one request (a body over the Function URL's 6 MB, less the
   * envelope: `MAX_INLINE_BODY_BYTES`) through `POST /uploads` and its presigned PUT, then
   * enqueue it by reference, instead of sending a request the API would refuse (413). It costs
   * one more request to the API and one S3 PUT, and only for such payloads; smaller ones go inline
   * as before. `false` sends every payload inline.
   *
   * On by default because that is how AWS's own clients treat the same wall: the SQS and SNS
   * Extended Client Libraries move a message body over the service limit to S3 by themselves, and
   * the S3 transfer manager picks a multipart upload by size. A payload the platform accepts (up
   * to 16 MiB) should enqueue without the caller knowing the Function URL's limit. Use
   * `client.upload` and enqueue its {@link UploadRef} to upload ahead of time or once for
   * several enqueues.
   * @default true
   * @example
   * const { job, upload } = await client.enqueue('render-report', { rows }); // rows: 9 MB of JSON
   * console.log(upload?.ref); // 'u/3f2a…': it went through an upload
   */
  autoUpload?: boolean;
}

/**
 * One item of `enqueueBatch`: the type, its payload (or an {@link UploadRef}: `client.upload`'s
 * answer, sent as `payloadRef`), and the usual options. A batch uploads nothing by itself.
 */
export type BatchItem<T extends JobTypeMap> = {
  [K in TypeName<T>]: { type: K; payload: T[K]['input'] | UploadRef } & EnqueueOptions;
}[TypeName<T>];

/** Outcome of one item of `POST /jobs/batch`, in request order: `created`/`existing` with the job, or `error`. */
export type BatchResult = z.output<typeof batchItemResultSchema>;

/** A job as `GET /jobs` lists it (the fields the listing indexes hold). */
export type JobSummary = z.output<typeof jobSummarySchema>;

/** Filter of `GET /jobs`. */
export interface ListFilter<K extends string = string> {
  type?: K;
  state?: JobState;
  /** Only jobs created at or after this time. */
  createdAfter?: Date | string;
  /** Only jobs created before this time. */
  createdBefore?: Date | string;
  /** Page size (the API's `limit`, 1–100); iteration continues across pages. @default 20 (the API's) */
  limit?: number;
  /** Start at this page (the `nextCursor` of an earlier page, same filters). */
  cursor?: string;
  /**
   * Payload search: dotted path → value the job's payload must hold there (at most 3, all must
   * match; sent as `payload.<path>=`). Numbers, booleans and null match as their JSON text.
   * A page may then hold fewer than `limit` jobs; iteration follows the cursor.
   * @example { 'to.domain': 'example.com', priority: 1 }
   * @default none
   */
  payload?: Record<string, string | number | boolean | null>;
}

/** `POST /jobs/bulk` action. */
export type BulkAction = 'retry' | 'cancel';

/** What `client.rerun` takes (`POST /jobs/{id}/rerun`). */
export interface RerunOptions {
  /**
   * The recorded step (or sleep, wait, invoke) to run again from: the entries recorded before it
   * are kept. @default the start: nothing kept
   */
  fromStep?: string;
  /** A corrected payload, validated as an enqueue's. @default the job's payload */
  payload?: unknown;
}

/** One id's outcome of `POST /jobs/bulk`, in the order of the ids. */
export type BulkResult = z.output<typeof bulkResultSchema>;

/** `GET /overview`: per deployed type, counts by state, a series, the DLQ depth and the oldest queued age. */
export type Overview = z.output<typeof overviewSchema>;

/** One page of a listing. `nextCursor` is null on the last page; a page may be short (or empty) and still have one. */
export interface Page<Item> {
  items: Item[];
  nextCursor: string | null;
}

/**
 * A listing: iterate it for items (`for await (const job of client.list())`), or call
 * `pages()` for whole pages. Each iteration starts again from the filter's cursor and sends
 * requests only as it goes.
 */
export interface Listing<Item> extends AsyncIterable<Item> {
  pages(): AsyncIterable<Page<Item>>;
  /** Collects items across pages, stopping after `max`. */
  toArray(options?: { max?: number }): Promise<Item[]>;
}

/** `GET /types/{type}/keys/{key}`: the flow-control state of one key value of a job type. */
export type KeyState = z.output<typeof keyStateSchema>;

/** What `PUT` and `DELETE /types/{type}/keys/{key}/limits` answer: the key's limits as they hold now. */
export type KeyLimits = z.output<typeof keyLimitsResponseSchema>;

/** `GET /types/{type}/keys`: the keys of a type's limits that one read can list (a fair limit's, with their shares). */
export type TypeKeys = z.output<typeof typeKeysSchema>;

/**
 * What to set on a key at run time, in place of the spec's: its concurrency limit, its weight in a
 * limit shared fairly, its throttle or its rate limit (at least one).
 */
export interface KeyLimitsInput {
  /** The concurrency limit, 1 to 1000. */
  concurrency?: number;
  /** Which of the type's concurrency limits (its index). @default the first limit with a key function, or the only limit */
  limit?: number;
  /** The key's weight in the type's limit shared fairly (`fairBy`): more than 0, at most 1000. */
  weight?: number;
  /** The key's throttle: `limit` starts per `periodSeconds`, bursts of `burst` (@default 1). */
  throttle?: { limit: number; periodSeconds: number; burst?: number };
  /** The key's rate limit: `limit` jobs accepted per `periodSeconds`. */
  rateLimit?: { limit: number; periodSeconds: number };
}

// ---------------------------------------------------------------------------------------------
// Dead-letter queues
// ---------------------------------------------------------------------------------------------

/** A message in a job type's DLQ, looked at without being consumed. */
export type DeadLetter = z.output<typeof deadLetterSchema>;

/** `GET /dlq?type=`: up to `limit` (≤ 10) messages and the queue's approximate depth. */
export type DlqListing = z.output<typeof dlqPeekSchema>;

/**
 * `POST /dlq/redrive`: `method: 'move-task'` when SQS moves the messages asynchronously,
 * `method: 'receive-send'` when the API moved up to `maxMessages` itself.
 */
export type RedriveResult = z.output<typeof redriveResultSchema>;

// ---------------------------------------------------------------------------------------------
// Schedules
// ---------------------------------------------------------------------------------------------

/** A recurring schedule as the API returns it (`payload` only on `get`, `create` and `update`). */
export type { ScheduleView } from '../schedules/model';

type ScheduleFields = Omit<z.input<typeof scheduleRequestSchema>, 'name' | 'type' | 'payload' | 'priority'> & {
  /**
   * The priority of every run the schedule makes, 0 to 10, higher first. Only for a job type with
   * a `priority` option (400 `invalid_priority` otherwise); the API checks it as the enqueue does.
   * @default the type's `priority.default`, resolved when the schedule is written
   * @example
   * await client.schedules.create({ name: 'nightly', type: 'render', payload, cron: '0 2 * * *', priority: 3 });
   */
  priority?: number;
};

/**
 * Body of `POST /schedules`: a name, the job type and payload each fire enqueues, and exactly
 * one of `cron` (five-field Unix cron, `@daily`, or AWS `cron(...)`) or `rate` (`5 minutes`).
 */
export type ScheduleInput<T extends JobTypeMap = UntypedJobs> = {
  [K in TypeName<T>]: { name: string; type: K; payload: T[K]['input'] } & ScheduleFields;
}[TypeName<T>];

/** Body of `PUT /schedules/{name}`: the whole definition again (it replaces the old one; `name` may be left out). */
export type ScheduleDefinition<T extends JobTypeMap = UntypedJobs> = {
  [K in TypeName<T>]: { name?: string; type: K; payload: T[K]['input'] } & ScheduleFields;
}[TypeName<T>];

export interface ScheduleFilter {
  /** Page size, 1–100. @default 50 (the API's) */
  limit?: number;
  /** Start at this page (the `nextCursor` of an earlier page). */
  cursor?: string;
}
