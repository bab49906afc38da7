/**
 * The typed Orrery client: every API route as a method, SigV4 signing, retries with backoff,
 * typed errors, and payload types checked at compile time against the job catalog.
 *
 * @example
 * import { catalog } from '../../functions/jobs/catalog';
 * import { createClient, NotFound } from '../../shared/client';
 *
 * const orrery = createClient({ url: process.env.ORRERY_URL!, jobs: catalog });
 * const { job } = await orrery.enqueue('flaky', { failTimes: 2 }, { delaySeconds: 10 });
 * const done = await orrery.waitFor(job.id, 'succeeded', { timeout: 60_000 });
 * for await (const summary of orrery.list({ type: 'flaky', state: 'failed' })) console.log(summary.id);
 *
 * @module
 */
import { TERMINAL_STATES } from '../core/states';
import { JobTypeMismatch, JobWaitError } from './errors';
import { type CredentialsInput, isLocalUrl, type RequestSigner, signingRegion, sigV4Signer } from './signing';
import { type CallSpec, call, DEFAULT_RETRY, type QueryValue, type RetryOptions, segment } from './transport';
import type {
  BatchItem,
  BatchResult,
  BulkAction,
  BulkResult,
  DlqListing,
  EnqueueCallOptions,
  EnqueueOptions,
  EnqueueResult,
  EventJobs,
  EventToSend,
  EventView,
  FlowJob,
  FlowView,
  InvokedJob,
  JobCatalog,
  JobState,
  JobSummary,
  JobTypeMap,
  JobTypesOf,
  JobView,
  KeyLimits,
  KeyLimitsInput,
  KeyState,
  ListFilter,
  Listing,
  Overview,
  Page,
  RedriveResult,
  RerunOptions,
  ScheduleDefinition,
  ScheduleFilter,
  ScheduleInput,
  ScheduleView,
  SignalName,
  SignalPayload,
  SignalPayloadArg,
  SignalReceipt,
  Timeline,
  TypedJob,
  TypeKeys,
  TypeName,
  TypeSignalName,
  TypeSignalPayload,
  UntypedJobs,
  WaitedJob,
} from './types';
import {
  isUploadRef,
  overInlineLimit,
  type Upload,
  type UploadBody,
  type UploadOptions,
  type UploadRef,
  upload,
} from './upload';

export * from './errors';
export type { AwsCredentials, CredentialsInput, RequestSigner, SignableRequest } from './signing';
export { isLocalUrl, regionFromUrl, sigV4Signer } from './signing';
export type { RetryOptions } from './transport';
export type * from './types';
export type { Upload, UploadBody, UploadOptions, UploadRef } from './upload';
export { isUploadRef, uploadRef } from './upload';

export interface ClientOptions<C extends JobCatalog = JobCatalog> {
  /** Base URL of the API: the stack's `ApiUrl` output, or `http://127.0.0.1:4600` for `npm run dev`. */
  url: string | URL;
  /**
   * Job types, for compile-time payload checks: the catalog tuple or a `{ name: spec }` record.
   * Definitions (`defineJob`'s results) may stand in for specs, and type each job's `result` as
   * well; to keep handler code out of the client's bundle, give them as a type only:
   * `createClient<typeof jobs>({ url })` with `import type { jobs } from './jobs'`.
   * Only its types matter; nothing is validated on the client.
   */
  jobs?: C;
  /**
   * Region to sign for.
   * @default the region in a Function URL host (`*.lambda-url.<region>.on.aws`), else `AWS_REGION`, `AWS_DEFAULT_REGION`, else `us-east-1`
   */
  region?: string;
  /** @default the AWS SDK's default credential chain, loaded on the first signed request */
  credentials?: CredentialsInput;
  /**
   * `true` signs every request with SigV4 (service `lambda`), `false` sends them unsigned, a
   * function signs them its own way.
   * @default true, except for `127.0.0.1`, `localhost` and `[::1]` URLs (the local dev server takes unsigned requests)
   */
  sign?: boolean | RequestSigner;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /**
   * Retries of 429 and 503 answers (and, for idempotent requests, of network errors, 502 and
   * 504). `false` turns them off.
   * @default { retries: 3, baseDelayMs: 200, maxDelayMs: 5_000 }
   */
  retry?: Partial<RetryOptions> | false;
  /**
   * Time limit of each attempt, answer body included.
   * @default 30_000
   */
  timeoutMs?: number;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
}

/** Options of `get`. */
export interface GetOptions {
  signal?: AbortSignal;
}

/**
 * The job type the caller expects of an id, for `get`, `waitFor` and `signal`: it types the job
 * (its payload, its `result`) or the signal by that type's spec.
 */
export interface ExpectedType<K extends string> {
  /**
   * The job's type. `get` and `waitFor` check it against the job they read and throw a
   * {@link JobTypeMismatch} when it differs; `signal` sends nothing of it (the API checks the
   * signal against the job's own type).
   */
  type: K;
}

export interface WaitOptions {
  /**
   * Give up after this many milliseconds (rejects with a {@link JobWaitError}, `reason: 'timeout'`).
   * @default 60_000
   */
  timeout?: number;
  /**
   * Milliseconds between two polls.
   * @default 500
   */
  interval?: number;
  signal?: AbortSignal;
  /** Called with the job after every poll. */
  onPoll?: (job: JobView) => void;
}

export interface ScheduleClient<T extends JobTypeMap> {
  /** `POST /schedules`. Idempotent by name: the same definition again returns the schedule (`created: false`). */
  create(input: ScheduleInput<T>): Promise<{ created: boolean; schedule: ScheduleView }>;
  /** `GET /schedules/{name}`, with its payload. */
  get(name: string): Promise<ScheduleView>;
  /** `GET /schedules`: iterate for schedules, or `.pages()`; follows cursors. */
  list(filter?: ScheduleFilter): Listing<ScheduleView>;
  /** `PUT /schedules/{name}`: replaces the definition (counters and the latest run are kept). */
  update(name: string, definition: ScheduleDefinition<T>): Promise<ScheduleView>;
  /** `POST /schedules/{name}/pause`: no fire until resumed. */
  pause(name: string): Promise<ScheduleView>;
  /** `POST /schedules/{name}/resume`: fires again from the next slot (no catch-up). */
  resume(name: string): Promise<ScheduleView>;
  /** `DELETE /schedules/{name}`: the jobs it created stay. */
  delete(name: string): Promise<void>;
  /**
   * `POST /schedules/{name}/run`: enqueues one job now from the schedule's type, payload and
   * maxAttempts (paused schedules too). Sent with an `Idempotency-Key`, so a retried request
   * cannot run it twice; `created` is false when the key (or `id`) had run it already.
   * @example
   * const { job } = await client.schedules.run('nightly-report');
   */
  run(
    name: string,
    options?: {
      /** @default a random UUID generated by the client before the first attempt */
      idempotencyKey?: string;
      /** The job id. @default derived by the API from the idempotency key */
      id?: string;
    },
  ): Promise<{ created: boolean; job: JobView }>;
}

export interface DlqClient<T extends JobTypeMap> {
  /** `GET /dlq?type=`: looks at up to `limit` (1–10, default 10) messages of the type's DLQ without consuming them. */
  list(type: TypeName<T>, options?: { limit?: number }): Promise<DlqListing>;
  /**
   * `POST /dlq/redrive`: moves the type's DLQ messages back to its ready queue (an SQS move
   * task, or up to `maxMessages` moved by the API where move tasks are not available).
   */
  redrive(type: TypeName<T>, options?: { maxMessages?: number }): Promise<RedriveResult>;
}

export interface OrreryClient<T extends JobTypeMap = UntypedJobs> {
  /** The API's base URL. */
  readonly url: URL;
  /** Whether requests are signed. */
  readonly signed: boolean;
  /**
   * `POST /jobs`. Without `options.id` the client generates one (a UUID) before the first
   * attempt, so retrying after a lost answer can only return the same job, never create two.
   *
   * A payload whose request would be over the Function URL's limit (about 6 MB of JSON) is
   * uploaded first and enqueued by reference (see `autoUpload`); the result's `upload` says so.
   * An {@link UploadRef} (from {@link OrreryClient.upload} or `uploadRef`) in place of the payload
   * enqueues that upload (`payloadRef`): the API reads it back and checks it against the type's
   * schema as it would an inline payload.
   * @example
   * const { job } = await client.enqueue('render-report', { rows }); // any size up to 16 MiB
   */
  enqueue<K extends TypeName<T>>(
    type: K,
    payload: T[K]['input'] | UploadRef,
    options?: EnqueueCallOptions,
  ): Promise<EnqueueResult<TypedJob<T, K>>>;
  /**
   * Uploads a payload to the deployment's payload bucket, for an enqueue too large for one
   * request: `POST /uploads` (granted as `enqueue`), then a PUT of the bytes to the presigned S3
   * URL it answers (sent with the method and headers the API names, not signed by the client:
   * the URL carries S3's signature). Resolves to the upload's reference; enqueue with it
   * (`client.enqueue(type, upload)`) within a day, when the bucket's lifecycle removes it.
   *
   * `body` is the payload: a value (sent as its JSON), or JSON text or its UTF-8 bytes as they
   * are (a file read whole). It must be a JSON object by the time it is enqueued; the API checks it
   * then, not here. Costs one API request and one S3 PUT; writes no DynamoDB item.
   *
   * Throws {@link UploadFailed} when S3 refuses the PUT or the body is over the API's `maxBytes`
   * (16 MiB), {@link UploadUrlExpired} when the URL (valid 15 minutes) had expired when the PUT
   * reached S3, and a {@link NotFound} (`not_configured`) from a deployment without a payload
   * bucket. A network error or an S3 500/503 is retried as the client's `retry` says.
   * @default options.timeoutMs 120_000 (each PUT attempt)
   * @example
   * const upload = await client.upload(readFileSync('rows.json')); // bytes as they are
   * await client.enqueue('render-report', upload);
   * await client.enqueue('archive-report', upload); // one upload, two jobs (each keeps its own copy)
   */
  upload(body: UploadBody, options?: UploadOptions): Promise<Upload>;
  /** `POST /jobs/batch`: one result per item, in order. Items without an id get one from the client. */
  enqueueBatch(items: readonly BatchItem<T>[]): Promise<BatchResult[]>;
  /**
   * `GET /jobs/{id}`. With `type`, the job comes back typed by that type's spec and handler (its
   * payload, its `result`), and a job of another type throws a {@link JobTypeMismatch}.
   * @example
   * const job = await client.get(id, { type: 'invoice' }); // job.result: the invoice handler's result | null
   */
  get<K extends TypeName<T>>(id: string, options: GetOptions & ExpectedType<K>): Promise<TypedJob<T, K>>;
  get(id: string, options?: GetOptions): Promise<JobView>;
  /**
   * `POST /flows`: a DAG of up to 100 jobs, checked whole before any is written (a cycle, an
   * unknown parent, a bad policy: 400 and nothing written). `created` is false for a replay.
   * @example
   * await client.createFlow([
   *   { id: 'a', type: 'extract', payload: {} },
   *   { id: 'b', type: 'load', payload: {}, dependsOn: ['a'] },
   * ], { id: 'etl-2026-06-01' });
   */
  createFlow(jobs: readonly FlowJob<T>[], options?: { id?: string }): Promise<{ created: boolean; flow: FlowView }>;
  /**
   * `POST /events`: sends an event; each job type that subscribes to it (`on`) gets one job. The
   * request is checked whole before anything is written (400: an event nothing subscribes to,
   * data its schema refuses). Give an `id` to make a resend safe: the same id makes nothing new.
   * @example
   * const { jobs } = await client.sendEvent('order.placed', { orderId: 'o1', total: 12 }, { id: 'order-o1' });
   */
  sendEvent(name: string, data: Record<string, unknown>, options?: { id?: string }): Promise<EventView>;
  /** `POST /events` with up to 100 events: one answer per event, in order; any bad event refuses them all. */
  sendEvents(events: readonly EventToSend[]): Promise<EventView[]>;
  /** `GET /events/{id}`: the jobs the event made (of the types the caller may read). */
  getEvent(id: string): Promise<EventJobs>;
  /** `GET /flows/{id}`: the flow's graph and each job's state. */
  getFlow(id: string): Promise<FlowView>;
  /**
   * `GET /jobs/{id}/invoked`: the jobs `id` started with `ctx.invoke`, in the order it invoked
   * them, each with its type and state (null for a job no longer stored). Iterate for items, or
   * `.pages()` for pages (100 a page); follows cursors.
   * @example
   * for await (const child of client.invoked('order-1')) console.log(child.name, child.id, child.state);
   */
  invoked(id: string): Listing<InvokedJob>;
  /**
   * `GET /jobs/{id}/timeline`: the job's attempts and its journal's steps, sleeps, waits and
   * invokes in the order they were recorded; follows cursors (100 entries a page), so `entries`
   * holds them all and `nextCursor` is null. Writes nothing.
   * @example
   * const { attempts, entries } = await client.timeline('order-1');
   * for (const e of entries) if (e.kind === 'step') console.log(e.name, e.durationMs, e.preview);
   */
  timeline(id: string): Promise<Timeline>;
  /** `GET /jobs`: iterate for items, or `.pages()` for pages; follows cursors. */
  list(filter?: ListFilter<TypeName<T>>): Listing<JobSummary>;
  /** `GET /types/{type}/latest`: the type's most recent job. */
  latest(type: TypeName<T>): Promise<JobView>;
  /**
   * `GET /types/{type}/keys/{key}`: the flow-control state of one key value of a type: who holds
   * its concurrency and singleton slots and how many wait, a throttle's or rate limit's next
   * start, a debounce's open window.
   * @example
   * const state = await client.keyState('tenant-sync', 'tenant-42');
   * console.log(state.limits[0]?.running.length, state.limits[0]?.waiting);
   */
  keyState(type: TypeName<T>, key: string): Promise<KeyState>;
  /**
   * `PUT /types/{type}/keys/{key}/limits`: sets the key's concurrency limit at run time, in place
   * of the spec's, from the next start (a raise hands its new places to waiting jobs at once). Use
   * the key `*` for a limit without a key function. Needs the `operate` grant.
   * @example
   * await client.setKeyLimits('tenant-sync', 'tenant-42', { concurrency: 10 }); // a paying tenant
   */
  setKeyLimits(type: TypeName<T>, key: string, limits: KeyLimitsInput): Promise<KeyLimits>;
  /**
   * `DELETE /types/{type}/keys/{key}/limits`: removes the key's run-time limit; the spec's holds again.
   * @example
   * await client.clearKeyLimits('tenant-sync', 'tenant-42');
   * await client.clearKeyLimits('tenant-sync', 'tenant-42', { field: 'weight' });
   */
  clearKeyLimits(
    type: TypeName<T>,
    key: string,
    options?: { limit?: number; field?: 'concurrency' | 'weight' | 'throttle' | 'rateLimit' },
  ): Promise<KeyLimits>;
  /**
   * `GET /types/{type}/keys`: the keys one read can list; for a limit shared fairly, each fair key
   * that runs, waits or has a weight set, with its share.
   * @example
   * const { limits } = await client.typeKeys('tenant-sync');
   */
  typeKeys(type: TypeName<T>): Promise<TypeKeys>;
  /** `POST /jobs/{id}/cancel`. */
  cancel(id: string): Promise<JobView>;
  /** `POST /jobs/{id}/retry`: runs a failed or cancelled job again. */
  retry(id: string): Promise<JobView>;
  /**
   * `POST /jobs/{id}/rerun`: runs a job that ended (failed, cancelled, expired, succeeded) again
   * as the same job, keeping the journal entries recorded before `fromStep` (none without it:
   * from the start), with a corrected `payload` when given (validated as an enqueue's). An
   * unknown step is a `ValidationError` (400 `unknown_step`); a job that has not ended, 409.
   * Not retried by the transport: a rerun applied whose answer was lost answers 409 when sent again.
   * @example
   * await client.rerun('order-1', { fromStep: 'charge', payload: { orderId: 'o-1', total: 42 } });
   */
  rerun(id: string, options?: RerunOptions): Promise<JobView>;
  /**
   * `POST /jobs/{id}/signals/{name}`: sends the signal a handler waits for with
   * `ctx.waitForSignal(name)` (or will wait for: the job's inbox keeps it). The receipt says
   * whether the job resumed now (`resumed`), or whether its wait had already timed out (`late`:
   * no wait returns the signal). Sending the same payload again is harmless (`duplicate: true`);
   * another payload is refused (409 `signal_exists`).
   *
   * A client built with the catalog takes the signal names its types declare (`signals`), each
   * with its payload's type, so a typo or a wrong payload does not compile; with `{ type }`, the
   * names and payloads of that type (any name, for a type that declares none). Without a catalog,
   * or when no type declares signals, any name and any payload.
   * @default payload null
   * @example
   * const { resumed, late } = await client.signal('order-1234', 'payment', { amount: 42 });
   * if (late) await refund('order-1234'); // the order had been abandoned
   */
  signal<N extends SignalName<T>>(
    id: string,
    name: N,
    ...payload: SignalPayloadArg<SignalPayload<T, N>>
  ): Promise<SignalReceipt>;
  signal<K extends TypeName<T>, N extends TypeSignalName<T, K>>(
    id: string,
    name: N,
    payload: TypeSignalPayload<T, K, N>,
    options: ExpectedType<K>,
  ): Promise<SignalReceipt>;
  /**
   * `POST /jobs/bulk`: `retry` or `cancel` for 1–100 unique ids; one result per id, in order
   * (`applied`, `refused` with the job's state, `not_found`).
   * @example
   * const results = await client.bulk('retry', ['job-1', 'job-2']);
   */
  bulk(action: BulkAction, ids: readonly string[]): Promise<BulkResult[]>;
  /**
   * `GET /overview`: per deployed type, the jobs created in the last `windowMinutes` (5–1440)
   * counted by state, a created/succeeded/failed series, the DLQ depth and the oldest queued age.
   * @example
   * const { types } = await client.overview({ windowMinutes: 60 });
   */
  overview(options?: {
    /** @default 60 (the API's) */
    windowMinutes?: number;
  }): Promise<Overview>;
  /**
   * Polls `GET /jobs/{id}` until the job is in one of `states`. Rejects with a
   * {@link JobWaitError} when `timeout` passes, or at once when the job ends in another
   * terminal state (`reason: 'terminal'`) or is held for an operator (`reason: 'held'`). With `type`, the job comes back typed by that type's
   * spec and handler (a job of another type throws a {@link JobTypeMismatch}); waiting for
   * `succeeded` alone, its `result` is the handler's, not null.
   * @example
   * const { job } = await client.enqueue('invoice', order);
   * const done = await client.waitFor(job.id, 'succeeded', { type: job.type });
   * console.log(done.result.totalCents); // typed when the client was built with the invoice definition
   */
  waitFor<K extends TypeName<T>, S extends JobState>(
    id: string,
    states: S | readonly S[],
    options: WaitOptions & ExpectedType<K>,
  ): Promise<WaitedJob<T, K, S>>;
  waitFor(id: string, states: JobState | readonly JobState[], options?: WaitOptions): Promise<JobView>;
  readonly dlq: DlqClient<T>;
  readonly schedules: ScheduleClient<T>;
  /** `GET /openapi.json`: the API's OpenAPI 3.1 document. */
  openApi(): Promise<Record<string, unknown>>;
}

/** `UntypedJobs` when no catalog was given, else the catalog's type map. */
export type JobTypesFor<C extends JobCatalog> = JobCatalog extends C ? UntypedJobs : JobTypesOf<C>;

function newId(): string {
  return globalThis.crypto.randomUUID();
}

function enqueueBody(type: string, payload: unknown, options: EnqueueOptions & { autoUpload?: boolean } = {}) {
  const { runAt, dispatchBy, autoUpload: _local, ...rest } = options;
  const iso = (t: Date | string) => (t instanceof Date ? t.toISOString() : t);
  return {
    type,
    ...(isUploadRef(payload) ? { payloadRef: payload.ref } : { payload }),
    ...rest,
    id: options.id ?? newId(),
    ...(runAt === undefined ? {} : { runAt: iso(runAt) }),
    ...(dispatchBy === undefined ? {} : { dispatchBy: iso(dispatchBy) }),
  };
}

function listing<Item>(
  fetchPage: (cursor: string | undefined) => Promise<{ items: Item[]; nextCursor: string | null }>,
  start?: string,
): Listing<Item> {
  async function* pages(): AsyncGenerator<Page<Item>> {
    let cursor = start;
    const seen = new Set<string>();
    for (;;) {
      const raw = await fetchPage(cursor);
      const page: Page<Item> = { items: raw.items, nextCursor: raw.nextCursor ?? null };
      yield page;
      // A cursor seen before would loop forever: stop rather than trust it.
      if (!page.nextCursor || seen.has(page.nextCursor)) return;
      seen.add(page.nextCursor);
      cursor = page.nextCursor;
    }
  }
  return {
    pages,
    async *[Symbol.asyncIterator]() {
      for await (const page of pages()) yield* page.items;
    },
    async toArray({ max = Number.POSITIVE_INFINITY } = {}) {
      const out: Item[] = [];
      if (max <= 0) return out;
      for await (const page of pages()) {
        for (const item of page.items) {
          out.push(item);
          if (out.length >= max) return out;
        }
      }
      return out;
    },
  };
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });

/**
 * Creates a client. Requests are signed with SigV4 unless the URL is local (see `sign`).
 *
 * @example
 * // typed by the catalog: enqueue('flaky', { failTimes: 'x' }) does not compile
 * const orrery = createClient({ url: 'http://127.0.0.1:4600', jobs: catalog });
 * // or: createClient<typeof catalog>({ url })
 */
export function createClient<C extends JobCatalog = JobCatalog>(
  options: ClientOptions<C>,
): OrreryClient<JobTypesFor<C>> {
  const baseUrl = new URL(String(options.url));
  if (baseUrl.protocol !== 'http:' && baseUrl.protocol !== 'https:') {
    throw new TypeError(`Orrery URL must be http(s), got ${baseUrl.protocol}`);
  }
  if (options.jobs && !Array.isArray(options.jobs)) {
    for (const [name, entry] of Object.entries(options.jobs)) {
      const type = 'spec' in entry ? entry.spec.type : entry.type;
      if (type !== name) throw new TypeError(`jobs.${name} is the spec of "${type}"; the key must match`);
    }
  }
  let signer: RequestSigner | undefined;
  if (typeof options.sign === 'function') signer = options.sign;
  else if (options.sign ?? !isLocalUrl(baseUrl)) {
    const region = signingRegion(baseUrl, options.region);
    signer = sigV4Signer({ region, credentials: options.credentials });
  }
  const fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
  const transport = {
    baseUrl,
    fetch: fetchImpl,
    signer,
    retry: options.retry === false ? { ...DEFAULT_RETRY, retries: 0 } : { ...DEFAULT_RETRY, ...options.retry },
    timeoutMs: options.timeoutMs ?? 30_000,
    headers: { 'user-agent': 'orrery-client/0.1', ...options.headers },
  };
  const send = async <R>(spec: CallSpec) => (await call<R>(transport, spec)).body;
  const job = (id: string) => `/jobs/${segment(id)}`;
  /** The job, once checked to be of the type the caller expects (if it said one). */
  const ofType = (found: JobView, expected: string | undefined): JobView => {
    if (expected !== undefined && found.type !== expected) throw new JobTypeMismatch(expected, found);
    return found;
  };

  const client: OrreryClient<UntypedJobs> = {
    url: baseUrl,
    signed: signer !== undefined,

    async enqueue(type, payload, enqueueOptions = {}) {
      // the id is fixed before the upload, so a retried enqueue names the same job
      let request = enqueueBody(type, payload, { ...enqueueOptions, id: enqueueOptions.id ?? newId() });
      let uploaded: Upload | undefined;
      if ((enqueueOptions.autoUpload ?? true) && !isUploadRef(payload) && overInlineLimit(JSON.stringify(request))) {
        uploaded = await upload(transport, payload as object);
        request = enqueueBody(type, uploaded, { ...enqueueOptions, id: request.id });
      }
      const { status, body } = await call<JobView>(transport, {
        method: 'POST',
        path: '/jobs',
        body: request,
        idempotent: true,
      });
      return { created: status === 201, job: body as never, ...(uploaded ? { upload: uploaded } : {}) };
    },

    upload: (body, uploadOptions) => upload(transport, body, uploadOptions),

    async enqueueBatch(items) {
      const body = { jobs: items.map(({ type, payload, ...rest }) => enqueueBody(type, payload, rest)) };
      const out = await send<{ results: BatchResult[] }>({
        method: 'POST',
        path: '/jobs/batch',
        body,
        idempotent: true,
      });
      return out.results;
    },

    async createFlow(jobs, flowOptions = {}) {
      const body = {
        id: flowOptions.id ?? newId(),
        jobs: jobs.map(({ type, payload, ...rest }) => enqueueBody(type, payload, rest)),
      };
      const { status, body: flow } = await call<FlowView>(transport, {
        method: 'POST',
        path: '/flows',
        body,
        idempotent: true,
      });
      return { created: status === 201, flow };
    },

    getFlow: (id) => send({ method: 'GET', path: `/flows/${encodeURIComponent(id)}`, idempotent: true }),

    invoked: (id) =>
      listing<InvokedJob>((cursor) =>
        send({ method: 'GET', path: `${job(id)}/invoked`, query: { cursor }, idempotent: true }),
      ),

    async timeline(id) {
      let page = await send<Timeline>({ method: 'GET', path: `${job(id)}/timeline`, idempotent: true });
      const entries = [...page.entries];
      while (page.nextCursor !== null) {
        page = await send<Timeline>({
          method: 'GET',
          path: `${job(id)}/timeline`,
          query: { cursor: page.nextCursor },
          idempotent: true,
        });
        entries.push(...page.entries);
      }
      return { ...page, entries, nextCursor: null };
    },

    sendEvent: (name, data, eventOptions = {}) =>
      send({ method: 'POST', path: '/events', body: { name, id: eventOptions.id ?? newId(), data }, idempotent: true }),

    async sendEvents(events) {
      const body = { events: events.map((e) => ({ name: e.name, id: e.id ?? newId(), data: e.data })) };
      const out = await send<{ events: EventView[] }>({ method: 'POST', path: '/events', body, idempotent: true });
      return out.events;
    },

    getEvent: (id) => send({ method: 'GET', path: `/events/${encodeURIComponent(id)}`, idempotent: true }),

    async get(id: string, getOptions?: GetOptions & Partial<ExpectedType<string>>) {
      const found = await send<JobView>({ method: 'GET', path: job(id), idempotent: true, signal: getOptions?.signal });
      return ofType(found, getOptions?.type) as never;
    },

    list(filter = {}) {
      const { cursor: start, payload = {}, ...query } = filter;
      const conditions = Object.fromEntries(
        Object.entries(payload).map(([path, value]) => [
          `payload.${path}`,
          typeof value === 'string' ? value : JSON.stringify(value),
        ]),
      );
      return listing<JobSummary>(
        (cursor) =>
          send({
            method: 'GET',
            path: '/jobs',
            query: { ...query, ...conditions, cursor } as Record<string, QueryValue>,
            idempotent: true,
          }),
        start,
      );
    },

    latest: (type) => send({ method: 'GET', path: `/types/${segment(type)}/latest`, idempotent: true }),
    keyState: (type, key) =>
      send({ method: 'GET', path: `/types/${segment(type)}/keys/${segment(key)}`, idempotent: true }),
    // setting the same value again changes nothing: the transport may retry both
    setKeyLimits: (type, key, limits) =>
      send({
        method: 'PUT',
        path: `/types/${segment(type)}/keys/${segment(key)}/limits`,
        body: limits,
        idempotent: true,
      }),
    clearKeyLimits: (type, key, options = {}) =>
      send({
        method: 'DELETE',
        path: `/types/${segment(type)}/keys/${segment(key)}/limits`,
        query: {
          ...(options.limit === undefined ? {} : { limit: String(options.limit) }),
          ...(options.field === undefined ? {} : { field: options.field }),
        },
        idempotent: true,
      }),
    typeKeys: (type) => send({ method: 'GET', path: `/types/${segment(type)}/keys`, idempotent: true }),
    cancel: (id) => send({ method: 'POST', path: `${job(id)}/cancel`, idempotent: false }),
    retry: (id) => send({ method: 'POST', path: `${job(id)}/retry`, idempotent: false }),
    rerun: (id, rerunOptions = {}) =>
      send({
        method: 'POST',
        path: `${job(id)}/rerun`,
        body: {
          ...(rerunOptions.fromStep !== undefined ? { fromStep: rerunOptions.fromStep } : {}),
          ...(rerunOptions.payload !== undefined ? { payload: rerunOptions.payload } : {}),
        },
        idempotent: false,
      }),
    // a replay of the same signal is harmless (200, duplicate), so the transport may retry it
    signal: (id: string, name: string, payload: unknown = null) =>
      send<SignalReceipt>({
        method: 'POST',
        path: `${job(id)}/signals/${segment(name)}`,
        body: { payload },
        idempotent: true,
      }),
    async bulk(action, ids) {
      const out = await send<{ results: BulkResult[] }>({
        method: 'POST',
        path: '/jobs/bulk',
        body: { action, ids },
        idempotent: false,
      });
      return out.results;
    },
    overview: (overviewOptions = {}) =>
      send({
        method: 'GET',
        path: '/overview',
        query: { windowMinutes: overviewOptions.windowMinutes },
        idempotent: true,
      }),

    async waitFor(
      id: string,
      states: JobState | readonly JobState[],
      waitOptions: WaitOptions & Partial<ExpectedType<string>> = {},
    ) {
      const wanted: readonly JobState[] = typeof states === 'string' ? [states] : states;
      const { timeout = 60_000, interval = 500, signal, onPoll, type } = waitOptions;
      const deadline = Date.now() + timeout;
      for (;;) {
        const current = await client.get(id, { signal, ...(type === undefined ? {} : { type }) });
        onPoll?.(current);
        if (wanted.includes(current.state)) return current as never;
        if (TERMINAL_STATES.includes(current.state)) {
          throw new JobWaitError(
            'terminal',
            current,
            `job ${id} ended ${current.state}, not ${wanted.join(' or ')}${current.lastError ? `: ${current.lastError.message}` : ''}`,
          );
        }
        if (current.state === 'held') {
          throw new JobWaitError(
            'held',
            current,
            `job ${id} is held for an operator (retry, rerun or cancel), not ${wanted.join(' or ')}${current.lastError ? `: ${current.lastError.message}` : ''}`,
          );
        }
        const left = deadline - Date.now();
        if (left <= 0) {
          throw new JobWaitError(
            'timeout',
            current,
            `job ${id} is still ${current.state} after ${timeout} ms (waited for ${wanted.join(' or ')})`,
          );
        }
        await sleep(Math.min(interval, left), signal);
      }
    },

    openApi: () => send({ method: 'GET', path: '/openapi.json', idempotent: true }),

    dlq: {
      list: (type, dlqOptions = {}) =>
        send({ method: 'GET', path: '/dlq', query: { type, limit: dlqOptions.limit }, idempotent: true }),
      redrive: (type, redriveOptions = {}) =>
        send({ method: 'POST', path: '/dlq/redrive', body: { type, ...redriveOptions }, idempotent: false }),
    },

    schedules: {
      async create(input) {
        const { status, body } = await call<ScheduleView>(transport, {
          method: 'POST',
          path: '/schedules',
          body: input,
          idempotent: true,
        });
        return { created: status === 201, schedule: body };
      },
      get: (name) => send({ method: 'GET', path: `/schedules/${segment(name)}`, idempotent: true }),
      list(filter = {}) {
        const { cursor: start, ...query } = filter;
        return listing<ScheduleView>(async (cursor) => {
          const page = await send<{ schedules: ScheduleView[]; nextCursor: string | null }>({
            method: 'GET',
            path: '/schedules',
            query: { ...query, cursor },
            idempotent: true,
          });
          return { items: page.schedules, nextCursor: page.nextCursor };
        }, start);
      },
      update: (name, definition) =>
        send({ method: 'PUT', path: `/schedules/${segment(name)}`, body: definition, idempotent: true }),
      pause: (name) => send({ method: 'POST', path: `/schedules/${segment(name)}/pause`, idempotent: true }),
      resume: (name) => send({ method: 'POST', path: `/schedules/${segment(name)}/resume`, idempotent: true }),
      delete: async (name) => {
        await send({ method: 'DELETE', path: `/schedules/${segment(name)}`, idempotent: true });
      },
      async run(name, runOptions = {}) {
        const { status, body } = await call<{ job: JobView }>(transport, {
          method: 'POST',
          path: `/schedules/${segment(name)}/run`,
          headers: { 'idempotency-key': runOptions.idempotencyKey ?? newId() },
          ...(runOptions.id !== undefined ? { body: { id: runOptions.id } } : {}),
          idempotent: true,
        });
        return { created: status === 201, job: body.job };
      },
    },
  };
  return client as unknown as OrreryClient<JobTypesFor<C>>;
}
