import type { z } from 'zod';
import { ConfigError } from '../errors';
import { type RetryPolicy, retryPolicySchema } from './backoff';
import { type BatchOptions, batchProblem } from './batch';
import { type DebounceOptions, debounceProblem } from './debounce';
import { EVENT_SIGNAL_PREFIX, isEventSignal } from './event-waits';
import { type EventDefinition, type Subscription, subscriptionsProblem, waitsForProblem } from './events';
import { type ConcurrencyLimit, concurrencyProblem, type SingletonOptions, singletonProblem } from './flow';
import { STEP_NAME_PATTERN } from './journal';
import { sqsFairQueueProblem } from './message-group';
import { paceProblem, type RateLimitOptions, type ThrottleOptions } from './pace';
import { type PriorityOptions, priorityProblem } from './priority';

/** Pattern for job type names: they appear in keys, queue names and URLs. */
export const JOB_TYPE_PATTERN = /^[a-z][a-z0-9-]{0,39}$/;

/** Hard cap on a job's run time. Lambda's own maximum is 900 s; we keep a margin for bookkeeping. */
export const MAX_TIMEOUT_MS = 840_000;

/**
 * A payload schema: any zod 4 schema, built with full `zod` or with `zod/mini` (which shares
 * zod's core and keeps the worker bundle smaller and faster to load).
 */
export type PayloadSchema = z.core.$ZodType;

/**
 * The payload schemas of a job type's signals, by signal name. A spec that declares none has this
 * type itself (any name), which is how the types tell "declared" from "not declared".
 */
export type SignalSchemas = Readonly<Record<string, PayloadSchema>>;

/** Whether `Signals` lists its names (a spec with `signals`), rather than taking any name. */
export type DeclaresSignals<Signals extends SignalSchemas> = string extends keyof Signals ? false : true;

/**
 * What the enqueue API and the worker both know about a job type: its name, its payload
 * schema, and its run options. Keep it in a module that does not import handler code so the
 * API bundle stays small.
 */
/**
 * The worker ports a job type's flow control needs besides its store and queue: concurrency
 * limits and singletons take `flow` slots, a `cancel-running` singleton needs job `control`, a
 * throttle its `pacer`, a debounce its `debouncer`. See `createWorker`'s `WorkerDeps`.
 */
export type WorkerPort = 'flow' | 'control' | 'pacer' | 'debouncer';

/** The {@link WorkerPort}s that job type options `O` need (what `defineJobType` records on its spec). */
export type PortsNeededBy<O> =
  | (O extends { concurrency: readonly unknown[] } ? 'flow' : never)
  | (O extends { singleton: object } ? 'flow' : never)
  | (O extends { singleton: { mode: 'cancel-running' } } ? 'control' : never)
  | (O extends { throttle: object } ? 'pacer' : never)
  | (O extends { debounce: object } ? 'debouncer' : never);

declare const NEEDS: unique symbol;

/** The {@link WorkerPort}s a spec records (never for a spec typed wide). */
export type PortsOfSpec<S> = S extends { readonly [NEEDS]?: (needs: infer N) => void } ? N : never;

export interface JobTypeSpec<
  Schema extends PayloadSchema = PayloadSchema,
  Type extends string = string,
  Signals extends SignalSchemas = SignalSchemas,
  /**
   * The worker ports its options need (type-level only): `createWorker` then requires them, so a
   * worker built without one does not compile. A spec typed wider (`JobTypeSpec`) needs none at
   * compile time, and the worker checks at run time.
   */
  Needs extends WorkerPort = never,
> {
  /** Type-level only: never set (see `Needs`). A parameter position, so a spec that needs ports is still a `JobTypeSpec`. */
  readonly [NEEDS]?: (needs: Needs) => void;
  /** Name used in `POST /jobs` `type`. Lower-case letters, digits and `-`, 1–40 chars. */
  readonly type: Type;
  /** Validates the payload at enqueue time and again before the handler runs. */
  readonly payload: Schema;
  /**
   * Longest one attempt may run before its `AbortSignal` fires and the attempt fails.
   * @default 30_000 (30 s); at most 840_000 (14 min)
   */
  readonly timeoutMs: number;
  /** Retry policy; each field may be overridden per enqueue where noted. */
  readonly retry: RetryPolicy;
  /**
   * Safe fields to log about a job (payloads are never logged): the API and the worker add
   * them, under `details`, to their lines about the job. Keep it small and free of secrets.
   */
  describe?(payload: z.output<Schema>): Record<string, unknown>;
  /** Concurrency limits (see {@link JobTypeOptions.concurrency}); absent: none, and no cost. */
  readonly concurrency?: readonly ConcurrencyLimit<z.output<Schema>>[];
  /** Singleton (see {@link JobTypeOptions.singleton}); absent: none, and no cost. */
  readonly singleton?: SingletonOptions<z.output<Schema>>;
  /** Throttle (see {@link JobTypeOptions.throttle}); absent: none, and no cost. */
  readonly throttle?: ThrottleOptions<z.output<Schema>>;
  /** Rate limit (see {@link JobTypeOptions.rateLimit}); absent: none, and no cost. */
  readonly rateLimit?: RateLimitOptions<z.output<Schema>>;
  /** Debounce (see {@link JobTypeOptions.debounce}); absent: none, and no cost. */
  readonly debounce?: DebounceOptions<z.output<Schema>>;
  /** Priorities (see {@link JobTypeOptions.priority}); absent: every job in line is served oldest first. */
  readonly priority?: PriorityOptions;
  /** SQS fair queues (see {@link JobTypeOptions.sqsFairQueue}); absent: on for a type that keys its jobs. */
  readonly sqsFairQueue?: boolean;
  /**
   * Signal payload schemas by signal name (see {@link JobTypeOptions.signals}); absent: any
   * signal, any payload. Its names and payloads type `ctx.waitForSignal` and the client's `signal`.
   */
  readonly signals?: Signals;
  /** The events it subscribes to (see {@link JobTypeOptions.on}); absent: none. */
  readonly on?: readonly Subscription[];
  /** Batch handler settings (see {@link JobTypeOptions.batch}); absent: one job per handler call. */
  readonly batch?: BatchOptions<z.output<Schema>>;
  /** The events its handler waits for (see {@link JobTypeOptions.waitsFor}); absent: none. */
  readonly waitsFor?: readonly EventDefinition[];
}

export interface JobTypeOptions<
  Schema extends PayloadSchema,
  Type extends string = string,
  Signals extends SignalSchemas = SignalSchemas,
> {
  type: Type;
  payload: Schema;
  /** @default 30_000 */
  timeoutMs?: number;
  /** @default { maxAttempts: 3, backoff: { kind: 'exponential', baseMs: 1000, factor: 2, maxMs: 3_600_000 } } */
  retry?: z.input<typeof retryPolicySchema>;
  /** Log-safe fields of a payload, e.g. `(p) => ({ to: p.to.replace(/.*@/, '…@') })`. @default none */
  describe?: (payload: z.output<Schema>) => Record<string, unknown>;
  /**
   * Up to two concurrency limits: at no moment do more than `limit` jobs of one key value run,
   * across all workers. Jobs over the limit wait without polling and start in the order they
   * came, per key, as slots free. Each limit costs a job 2 write units (take and give back its
   * slot); a job that has to wait costs 5 more. See docs/flow-control.md.
   * @default none
   * @example
   * concurrency: [{ limit: 2, key: (p) => p.tenantId }, { limit: 20 }]
   */
  concurrency?: readonly ConcurrencyLimit<z.output<Schema>>[];
  /**
   * At most one job of a key value runs at once, in the type's scope or a named one shared with
   * other types. `mode` says what a job does when its key is taken: `queue` (wait its turn),
   * `skip` (end `skipped`), or `cancel-running` (cancel the running one, then start). Costs a
   * job 2 write units, like a concurrency limit of 1. See docs/flow-control.md.
   * @default none
   * @example
   * singleton: { key: (p) => p.accountId, mode: 'skip' }
   */
  singleton?: SingletonOptions<z.output<Schema>>;
  /**
   * At most `limit` starts per `periodSeconds` per key, with bursts of up to `burst` (GCRA). The
   * excess waits its turn (in order, without polling); nothing is lost. Each attempt takes a
   * turn. Costs a job 1 write unit; one that has to wait, 1 more. See docs/flow-control.md.
   * @default none
   * @example
   * throttle: { limit: 5, periodSeconds: 1, burst: 5, key: (p) => p.apiKey }
   */
  throttle?: ThrottleOptions<z.output<Schema>>;
  /**
   * At most `limit` jobs per `periodSeconds` per key are accepted, counted at enqueue; the excess
   * is written as `skipped` (reason `rate-limit`) and never runs. Costs 1 write unit per enqueue.
   * @default none
   * @example
   * rateLimit: { limit: 1, periodSeconds: 3600, key: (p) => p.userId }
   */
  rateLimit?: RateLimitOptions<z.output<Schema>>;
  /**
   * Jobs of one key enqueued close together make one run, with the last payload, once the key has
   * been quiet for `periodSeconds` (or `maxWaitSeconds` after the first). The jobs it replaced end
   * `skipped`, pointing to the run. Costs 2 write units per run (open and close the window) and 1
   * per replaced job. `delaySeconds` and `runAt` are refused for such a type.
   * @default none
   * @example
   * debounce: { key: (p) => p.catalogId, periodSeconds: 30, maxWaitSeconds: 300 }
   */
  debounce?: DebounceOptions<z.output<Schema>>;
  /**
   * Jobs carry a priority, 0 to 10 (higher first; `default` when the enqueue gives none), and a
   * place freed in a concurrency or singleton line, or a throttle's turn, goes to the best-ranked
   * waiting job: rank is the due time less `priority × agingSeconds`, so a job's wait stays
   * bounded (a job is passed only by jobs due no later than `(10 − p) × agingSeconds` after it).
   * Needs a `concurrency` or `singleton` limit or a `throttle`: without one, jobs start as SQS and
   * Lambda deliver them. A job that has to wait costs 10 write units instead of 5 (its place in
   * line and its admission are transactions); a throttled one 9 instead of 2. See
   * docs/flow-control.md.
   * @default none: oldest first
   * @example
   * concurrency: [{ limit: 10 }],
   * priority: { default: 0, agingSeconds: 30 }
   */
  priority?: PriorityOptions;
  /**
   * Whether a job's SQS messages carry a `MessageGroupId` naming its tenant: its first keyed
   * concurrency key, else its singleton key, else its throttle key (`messageGroupOf`). On a
   * standard queue that makes it an SQS fair queue: when one tenant has a large share of the
   * messages in flight, the others' messages are delivered first. It costs no DynamoDB read or
   * write; SQS's price for it is not verified here. `false` sends no group. See
   * docs/flow-control.md ("SQS fair queues").
   * @default true for a type with a keyed concurrency limit, a singleton or a keyed throttle (else no group)
   * @example
   * sqsFairQueue: false
   */
  sqsFairQueue?: boolean;
  /**
   * The signals its handlers wait for (`ctx.waitForSignal`), each with the schema of its payload:
   * `POST /jobs/{id}/signals/{name}` then refuses (400) a name not listed and a payload that does
   * not match. Without it, any signal name and any JSON payload are taken. Its names and payloads
   * also type the handler's `ctx.waitForSignal('payment')` and the client's
   * `signal(id, 'payment', payload)`: a name not listed, or a payload of another shape, does not compile.
   * Names starting `event:` are the event waits' own (`ctx.waitForEvent`) and are refused.
   * @default none: any signal
   * @example
   * signals: { payment: z.object({ amount: z.number(), currency: z.string() }) }
   */
  signals?: Signals;
  /**
   * The events it subscribes to: each event sent with `POST /events` makes one job of this type
   * (an id derived from the event's and the type, so a replay makes none), its payload the
   * event's data or what `payload` makes of it, unless `filter` turns the event down. See
   * docs/events.md.
   * @default none
   * @example
   * on: [subscribe(orderPlaced, { payload: (d) => ({ orderId: d.orderId }) })]
   */
  on?: readonly Subscription[];
  /**
   * Runs its jobs in batches: its handler (`defineBatchJob`) gets up to `maxSize` jobs per call,
   * gathered by the SQS event source mapping for up to `maxWaitSeconds`, grouped by `key`. Each
   * job keeps its own claim, attempts and result. Not with `signals` or `waitsFor`: a batch handler
   * never waits for a signal or an event. See docs/workflows.md, "Batch handlers".
   * @default none: one job per handler call (`defineJob`)
   * @example
   * batch: { maxSize: 100, maxWaitSeconds: 5, key: (p) => p.tenantId }
   */
  batch?: BatchOptions<z.output<Schema>>;
  /**
   * The events its handler waits for (`ctx.waitForEvent`) without subscribing to them: it puts
   * them in the API's catalog, so `POST /events` (and `ctx.emit`) takes them, checks their data,
   * and delivers them to the waits. Sending one is an `enqueue` on this type (as sending an event
   * is on its subscribers). An event a type subscribes to needs no entry here. See docs/events.md.
   * @default none
   * @example
   * waitsFor: [orderPaid]
   */
  waitsFor?: readonly EventDefinition[];
}

/**
 * Declares a job type. Put it in a file of its own (or a catalog) so the API can import it
 * without the handler.
 *
 * @example
 * export const sendEmail = defineJobType({
 *   type: 'send-email',
 *   payload: z.object({ to: z.email(), subject: z.string() }),
 *   timeoutMs: 10_000,
 *   retry: { maxAttempts: 5 },
 * });
 */
export function defineJobType<
  Schema extends PayloadSchema,
  const Type extends string = string,
  Signals extends SignalSchemas = SignalSchemas,
  // the options as written, so that the spec records which worker ports they need
  Options extends object = JobTypeOptions<Schema, Type, Signals>,
>(
  options: JobTypeOptions<Schema, Type, Signals> & Options,
): JobTypeSpec<Schema, Type, Signals, PortsNeededBy<Options>> {
  if (!JOB_TYPE_PATTERN.test(options.type)) {
    throw new ConfigError(
      `job type "${options.type}" must match ${JOB_TYPE_PATTERN} (lower-case letters, digits and -, up to 40 chars)`,
    );
  }
  const timeoutMs = options.timeoutMs ?? 30_000;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1000 || timeoutMs > MAX_TIMEOUT_MS) {
    throw new ConfigError(`job type "${options.type}": timeoutMs must be an integer from 1000 to ${MAX_TIMEOUT_MS}`);
  }
  const parsed = retryPolicySchema.safeParse(options.retry ?? {});
  if (!parsed.success) {
    throw new ConfigError(`job type "${options.type}": invalid retry policy: ${parsed.error.message}`);
  }
  if (options.describe !== undefined && typeof options.describe !== 'function') {
    throw new ConfigError(`job type "${options.type}": describe must be a function`);
  }
  const describe = options.describe ? { describe: options.describe } : {};
  let concurrency = {};
  if (options.concurrency !== undefined) {
    const problem = concurrencyProblem(options.concurrency);
    if (problem) throw new ConfigError(`job type "${options.type}": ${problem}`);
    concurrency = { concurrency: Object.freeze(options.concurrency.map((l) => Object.freeze({ ...l }))) };
  }
  let singleton = {};
  if (options.singleton !== undefined) {
    const problem = singletonProblem(options.singleton);
    if (problem) throw new ConfigError(`job type "${options.type}": ${problem}`);
    singleton = { singleton: Object.freeze({ ...options.singleton }) };
  }
  const paced: { throttle?: ThrottleOptions<z.output<Schema>>; rateLimit?: RateLimitOptions<z.output<Schema>> } = {};
  for (const what of ['throttle', 'rateLimit'] as const) {
    const value = options[what];
    if (value === undefined) continue;
    const problem = paceProblem(value, what);
    if (problem) throw new ConfigError(`job type "${options.type}": ${problem}`);
    paced[what] = Object.freeze({ ...value });
  }
  let debounce = {};
  if (options.debounce !== undefined) {
    const problem = debounceProblem(options.debounce);
    if (problem) throw new ConfigError(`job type "${options.type}": ${problem}`);
    debounce = { debounce: Object.freeze({ ...options.debounce }) };
  }
  let priority = {};
  if (options.priority !== undefined) {
    const problem = priorityProblem(options.priority);
    if (problem) throw new ConfigError(`job type "${options.type}": ${problem}`);
    if (options.concurrency === undefined && options.singleton === undefined && options.throttle === undefined) {
      throw new ConfigError(
        `job type "${options.type}": priority orders the line of a concurrency or singleton limit or a throttle, and ` +
          'this type has none: without one, jobs start as SQS delivers them. Add one, e.g. concurrency: [{ limit: 10 }]',
      );
    }
    priority = { priority: Object.freeze({ ...options.priority }) };
  }
  const fairQueue = sqsFairQueueProblem(options);
  if (fairQueue) throw new ConfigError(`job type "${options.type}": ${fairQueue}`);
  const sqsFairQueue = options.sqsFairQueue === undefined ? {} : { sqsFairQueue: options.sqsFairQueue };
  let signals = {};
  if (options.signals !== undefined) {
    const bad = Object.keys(options.signals).find((name) => !STEP_NAME_PATTERN.test(name));
    if (bad !== undefined) {
      throw new ConfigError(
        `job type "${options.type}": signal name "${bad}" must be 1-200 printable characters without "#"`,
      );
    }
    const reserved = Object.keys(options.signals).find(isEventSignal);
    if (reserved !== undefined) {
      throw new ConfigError(
        `job type "${options.type}": signal names starting "${EVENT_SIGNAL_PREFIX}" are the event waits' own ` +
          `("${reserved}"): use ctx.waitForEvent, or another name`,
      );
    }
    signals = { signals: Object.freeze({ ...options.signals }) };
  }
  let on = {};
  if (options.on !== undefined) {
    const problem = subscriptionsProblem(options.on);
    if (problem) throw new ConfigError(`job type "${options.type}": ${problem}`);
    on = { on: Object.freeze([...options.on]) };
  }
  let batch = {};
  if (options.batch !== undefined) {
    const problem = batchProblem(options.batch);
    if (problem) throw new ConfigError(`job type "${options.type}": ${problem}`);
    batch = { batch: Object.freeze({ ...options.batch }) };
  }
  let waitsFor = {};
  if (options.waitsFor !== undefined) {
    const problem = waitsForProblem(options.waitsFor);
    if (problem) throw new ConfigError(`job type "${options.type}": ${problem}`);
    waitsFor = { waitsFor: Object.freeze([...options.waitsFor]) };
  }
  if (options.batch !== undefined) {
    // a batch handler gets no ctx.waitForSignal nor ctx.waitForEvent: the API would take signals,
    // or events for the type's waits, that nothing ever reads
    const waits = options.signals !== undefined ? 'signals' : options.waitsFor !== undefined ? 'waitsFor' : undefined;
    if (waits) {
      throw new ConfigError(
        `job type "${options.type}": batch and ${waits} do not go together: a batch handler never waits for a signal or an event`,
      );
    }
  }
  return Object.freeze({
    type: options.type,
    payload: options.payload,
    timeoutMs,
    retry: parsed.data,
    ...describe,
    ...concurrency,
    ...singleton,
    ...paced,
    ...debounce,
    ...priority,
    ...sqsFairQueue,
    ...signals,
    ...on,
    ...batch,
    ...waitsFor,
  });
}
