/**
 * Fault injection for the real AWS SDK v3 clients the platform is given, at the SDK middleware
 * level (no mocks: every request that is not failed goes to the local emulators).
 *
 * The middleware sits in the `deserialize` step with low priority, i.e. between the SDK's
 * retry middleware (finalizeRequest step) and the HTTP handler, below the deserializer. It
 * therefore sees every HTTP attempt, and what it fakes is turned into errors by the SDK's own
 * deserializer and retried by the SDK's own retry strategy, as a real AWS throttle would be:
 *
 * - `before`: the attempt never reaches the emulator (nothing applied): a fabricated
 *   throttling / 5xx HTTP response, or a connection error (`ECONNREFUSED`).
 * - `after`: the attempt reaches the emulator and is APPLIED, then its response is replaced:
 *   a fabricated throttling / 5xx response, or a lost response (`ECONNRESET` / `TimeoutError`).
 *
 * Most faults hit one attempt (the SDK retries them). A call can also be chosen to fail on
 * every attempt, so its fault escapes the SDK's retries and reaches Orrery's code.
 *
 * It also provides "dead zones" (a killed Lambda process): every AWS call made from inside a
 * {@link DeadZones.run} scope that was killed never completes, and responses of calls that
 * were in flight when it was killed are dropped. Scopes follow the async context
 * (AsyncLocalStorage), so timers (heartbeats) started inside the scope are covered too.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { Readable } from 'node:stream';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SchedulerClient } from '@aws-sdk/client-scheduler';
import type { SQSClient } from '@aws-sdk/client-sqs';

export type Service = 'dynamodb' | 'sqs' | 'scheduler';
/** `latency` is a slow call (see {@link FaultProfile.latency}); the others fail the attempt. */
export type FaultKind = 'throttle' | 'server' | 'timeout' | 'latency';
export type FaultPhase = 'before' | 'after';

/** One AWS call as the injector sees it. */
export interface CallInfo {
  service: Service;
  /** SDK command name without `Command`, e.g. `UpdateItem`. */
  command: string;
  /**
   * `command`, refined for the job table's UpdateItem: `UpdateItem:claim`,
   * `UpdateItem:heartbeat`, `UpdateItem:succeed`, `UpdateItem:retry`, `UpdateItem:fail`,
   * `UpdateItem:other`.
   */
  op: string;
  /** The job id the call is about, when it can be told from the input. */
  jobId: string | undefined;
  input: Record<string, unknown>;
}

/** One injected fault (one failed HTTP attempt). */
export interface FaultEvent {
  op: string;
  jobId: string | undefined;
  kind: FaultKind;
  phase: FaultPhase;
  /** The call was chosen to fail on every SDK attempt. */
  escaping: boolean;
  /** 1-based SDK attempt. */
  attempt: number;
  at: number;
}

/** Random faults. Rates are per HTTP attempt (`rate`) or per call (`escapeRate`). */
export interface FaultProfile {
  /** Probability that one HTTP attempt of an eligible call fails (retried by the SDK). @default 0 */
  rate?: number;
  /** Probability that an eligible call fails on EVERY attempt, escaping SDK retries. @default 0 */
  escapeRate?: number;
  /** Share of faults that hit after the request was applied (lost responses). @default 0.5 */
  afterShare?: number;
  /** Weights of fault kinds. @default { throttle: 0.5, server: 0.3, timeout: 0.2 } */
  kinds?: Partial<Record<FaultKind, number>>;
  /** Calls eligible for per-attempt faults. @default every call */
  ops?: (call: CallInfo) => boolean;
  /** Calls eligible for escaping faults. @default every call */
  escapeOps?: (call: CallInfo) => boolean;
  /** Calls whose faults may hit after the request was applied; others fail before. @default every call */
  afterOps?: (call: CallInfo) => boolean;
  /**
   * Slow calls: with probability `rate` per HTTP attempt, the attempt is held for a delay in
   * [`minMs`, `maxMs`], either before it is sent (`before`) or after the emulator applied it
   * and before its answer is returned (`after`, a late answer). Recorded as kind `latency`.
   * A latency fault does not fail the attempt by itself; it can combine with a failure.
   * @default none
   */
  latency?: LatencyProfile;
}

/** See {@link FaultProfile.latency}. */
export interface LatencyProfile {
  rate: number;
  minMs: number;
  maxMs: number;
  /** Share of slow attempts delayed after being applied. @default 0.5 */
  afterShare?: number;
  /** Calls eligible. @default every call */
  ops?: (call: CallInfo) => boolean;
}

/** A scripted fault for deterministic tests. */
export interface ScriptedFault {
  match: (call: CallInfo) => boolean;
  kind: FaultKind;
  phase: FaultPhase;
  /** HTTP attempts to fail; `Infinity` fails every attempt of the matched calls. @default 1 */
  times?: number;
  /**
   * The matched call never settles and is never sent: the process that made it died there (as
   * a Lambda that is killed or times out mid-request), so nothing after it runs. Counted in
   * {@link FaultInjector.hung}, not in `events` (`kind` and `phase` are then unused). @default false
   */
  hang?: boolean;
}

const NEVER = new Promise<never>(() => {});

/** Killed "processes": scopes whose AWS calls never complete. */
export class DeadZones {
  private readonly storage = new AsyncLocalStorage<{ dead: boolean; onKill: (() => void)[] }>();
  /** Calls swallowed because their scope was dead. */
  swallowed = 0;

  /**
   * Runs `fn` in a fresh scope. `kill()` (from inside, through {@link killCurrent}) makes
   * every later AWS call of the scope hang forever and resolves `killed`.
   */
  run<T>(fn: () => Promise<T>): { result: Promise<T>; killed: Promise<void> } {
    const zone = { dead: false, onKill: [] as (() => void)[] };
    const killed = new Promise<void>((resolve) => zone.onKill.push(resolve));
    const result = this.storage.run(zone, fn);
    return { result, killed };
  }

  /** Kills the scope the caller runs in; returns false outside any scope. */
  killCurrent(): boolean {
    const zone = this.storage.getStore();
    if (!zone || zone.dead) return false;
    zone.dead = true;
    for (const listener of zone.onKill) listener();
    return true;
  }

  /** True when the caller runs in a killed scope. */
  isDead(): boolean {
    return this.storage.getStore()?.dead ?? false;
  }

  /** A promise that never settles, counted. */
  swallow(): Promise<never> {
    this.swallowed += 1;
    return NEVER;
  }
}

type AnyClient = DynamoDBClient | SQSClient | SchedulerClient;

interface MiddlewareArgs {
  input: Record<string, unknown>;
  request: { headers: Record<string, string> };
}
interface MiddlewareContext {
  commandName?: string;
}
type Next = (args: MiddlewareArgs) => Promise<{ response: unknown; output?: unknown }>;

/**
 * Injects faults into SDK clients. One injector can serve several clients; its random source
 * is injected so runs can be seeded.
 *
 * @example
 * const faults = new FaultInjector({ random: seeded(42), profile: { rate: 0.04 } });
 * const clients = { dynamo: new DynamoDBClient({}), sqs: new SQSClient({}), scheduler: new SchedulerClient({}) };
 * faults.install(clients.dynamo, 'dynamodb');
 * faults.install(clients.sqs, 'sqs');
 */
export class FaultInjector {
  readonly events: FaultEvent[] = [];
  /** Calls seen per op (one per `send`, not per attempt). */
  readonly calls = new Map<string, number>();
  /** Random faults are injected only while enabled. @default true */
  enabled = true;
  private readonly profile: FaultProfile;
  private readonly random: () => number;
  private readonly deadZones: DeadZones | undefined;
  private readonly scripted: (ScriptedFault & { left: number })[] = [];
  /** Calls a scripted `hang` swallowed. */
  hung = 0;
  private readonly escaping = new WeakSet<object>();
  private readonly decided = new WeakSet<object>();
  /** Receipt handle → job id, learned from ReceiveMessage outputs (for diagnosis). */
  readonly receiptJobs = new Map<string, string>();

  constructor(options: { random?: () => number; profile?: FaultProfile; deadZones?: DeadZones } = {}) {
    this.random = options.random ?? Math.random;
    this.profile = options.profile ?? {};
    this.deadZones = options.deadZones;
  }

  /** Adds a scripted fault; it is used before any random one. */
  script(fault: ScriptedFault): void {
    this.scripted.push({ ...fault, left: fault.times ?? 1 });
  }

  /** Counts of injected faults by `op/kind/phase` (and `escaping`). */
  summary(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const e of this.events) {
      const key = `${e.kind}/${e.phase}${e.escaping ? '/escaping' : ''}`;
      out[key] = (out[key] ?? 0) + 1;
    }
    return out;
  }

  /** Adds the fault middleware (and a small output observer) to a client. */
  install(client: AnyClient, service: Service): void {
    const stack = client.middlewareStack as unknown as {
      add(mw: unknown, options: { step: string; priority?: string; name: string; override?: boolean }): void;
    };
    stack.add(
      (next: Next, context: MiddlewareContext) => async (args: MiddlewareArgs) =>
        this.attempt(service, next, context, args),
      { step: 'deserialize', priority: 'low', name: 'orreryFaultInjection', override: true },
    );
    if (service === 'sqs') {
      stack.add(
        (next: Next) => async (args: MiddlewareArgs) => {
          const out = await next(args);
          const messages = (out.output as { Messages?: { ReceiptHandle?: string; Body?: string }[] } | undefined)
            ?.Messages;
          for (const m of messages ?? []) {
            const id = jobIdOfBody(m.Body);
            if (m.ReceiptHandle && id) this.receiptJobs.set(m.ReceiptHandle, id);
          }
          return out;
        },
        { step: 'initialize', priority: 'low', name: 'orreryReceiptObserver', override: true },
      );
    }
  }

  private async attempt(service: Service, next: Next, context: MiddlewareContext, args: MiddlewareArgs) {
    if (this.deadZones?.isDead()) return this.deadZones.swallow();
    const call = describeCall(service, context, args.input, this.receiptJobs);
    const attemptNo = attemptOf(args.request.headers);
    if (attemptNo === 1) this.calls.set(call.op, (this.calls.get(call.op) ?? 0) + 1);
    const slow = this.decideLatency(call);
    if (slow) {
      this.events.push({
        op: call.op,
        jobId: call.jobId,
        kind: 'latency',
        phase: slow.phase,
        escaping: false,
        attempt: attemptNo,
        at: Date.now(),
      });
      if (slow.phase === 'before') {
        await new Promise((resolve) => setTimeout(resolve, slow.ms));
        if (this.deadZones?.isDead()) return this.deadZones.swallow();
      }
    }
    const fault = this.decide(call, context as object);
    if (fault?.hang) {
      this.hung += 1;
      return NEVER;
    }
    if (fault) {
      this.events.push({ op: call.op, jobId: call.jobId, ...fault, attempt: attemptNo, at: Date.now() });
      if (fault.phase === 'after') {
        const out = await next(args); // applied; the answer is lost below
        await discardBody(out.response); // else its socket never returns to the client's pool
        if (this.deadZones?.isDead()) return this.deadZones.swallow();
      }
      return failure(service, fault.kind, fault.phase);
    }
    const out = await next(args);
    if (slow?.phase === 'after') await new Promise((resolve) => setTimeout(resolve, slow.ms));
    if (this.deadZones?.isDead()) {
      await discardBody(out.response);
      return this.deadZones.swallow();
    }
    return out;
  }

  private decideLatency(call: CallInfo): { phase: FaultPhase; ms: number } | undefined {
    const latency = this.profile.latency;
    if (!this.enabled || !latency || latency.rate <= 0) return undefined;
    if (!(latency.ops?.(call) ?? true) || this.random() >= latency.rate) return undefined;
    const ms = latency.minMs + Math.floor(this.random() * (latency.maxMs - latency.minMs + 1));
    return { phase: this.random() < (latency.afterShare ?? 0.5) ? 'after' : 'before', ms };
  }

  private decide(
    call: CallInfo,
    context: object,
  ): { kind: FaultKind; phase: FaultPhase; escaping: boolean; hang?: true } | undefined {
    for (const s of this.scripted) {
      if (s.left > 0 && s.match(call)) {
        s.left -= 1;
        return { kind: s.kind, phase: s.phase, escaping: false, ...(s.hang ? { hang: true as const } : {}) };
      }
    }
    if (!this.enabled) return undefined;
    const p = this.profile;
    if (!this.decided.has(context)) {
      this.decided.add(context);
      if ((p.escapeRate ?? 0) > 0 && (p.escapeOps?.(call) ?? true) && this.random() < (p.escapeRate ?? 0)) {
        this.escaping.add(context);
      }
    }
    if (this.escaping.has(context)) return { kind: this.pickKind(), phase: this.pickPhase(call), escaping: true };
    if ((p.rate ?? 0) > 0 && (p.ops?.(call) ?? true) && this.random() < (p.rate ?? 0)) {
      return { kind: this.pickKind(), phase: this.pickPhase(call), escaping: false };
    }
    return undefined;
  }

  private pickPhase(call: CallInfo): FaultPhase {
    const after = this.random() < (this.profile.afterShare ?? 0.5);
    return after && (this.profile.afterOps?.(call) ?? true) ? 'after' : 'before';
  }

  private pickKind(): FaultKind {
    const weights = { throttle: 0.5, server: 0.3, timeout: 0.2, ...this.profile.kinds };
    const total = weights.throttle + weights.server + weights.timeout;
    let r = this.random() * total;
    for (const kind of ['throttle', 'server', 'timeout'] as const) {
      r -= weights[kind];
      if (r < 0) return kind;
    }
    return 'throttle';
  }
}

/** Reads and drops an HTTP response body (a Node stream), so the connection can be reused. */
async function discardBody(response: unknown): Promise<void> {
  const body = (response as { body?: unknown } | undefined)?.body;
  if (body && typeof (body as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function') {
    for await (const _chunk of body as AsyncIterable<unknown>) {
      // drop it
    }
  }
}

/** The SDK's `amz-sdk-request: attempt=N; max=M` header (1 when absent). */
function attemptOf(headers: Record<string, string>): number {
  const value = headers['amz-sdk-request'] ?? '';
  const match = /attempt=(\d+)/.exec(value);
  return match ? Number(match[1]) : 1;
}

function jobIdOfBody(body: string | undefined): string | undefined {
  if (!body) return undefined;
  try {
    const parsed = JSON.parse(body) as { id?: unknown };
    return typeof parsed.id === 'string' ? parsed.id : undefined;
  } catch {
    return undefined;
  }
}

/** Names the call and the job it concerns. */
export function describeCall(
  service: Service,
  context: MiddlewareContext,
  input: Record<string, unknown>,
  receiptJobs?: Map<string, string>,
): CallInfo {
  const command = (context.commandName ?? 'Unknown').replace(/Command$/, '');
  let op = command;
  let jobId: string | undefined;
  if (service === 'dynamodb') {
    const pk =
      (input.Key as { pk?: { S?: string } } | undefined)?.pk?.S ??
      (input.Item as { pk?: { S?: string } } | undefined)?.pk?.S;
    if (pk?.startsWith('job#')) jobId = pk.slice(4);
    if (command === 'UpdateItem') op = `UpdateItem:${updateKind(input)}`;
  } else if (service === 'sqs') {
    if (command === 'SendMessage') jobId = jobIdOfBody(input.MessageBody as string | undefined);
    if (command === 'ChangeMessageVisibility') jobId = receiptJobs?.get(input.ReceiptHandle as string);
  }
  return { service, command, op, jobId, input };
}

function updateKind(input: Record<string, unknown>): string {
  const values = (input.ExpressionAttributeValues ?? {}) as Record<string, { S?: string }>;
  const to = values[':to']?.S;
  if (to === 'succeeded') return 'succeed';
  if (to === 'retrying') return 'retry';
  if (to === 'failed') return 'fail';
  const update = String(input.UpdateExpression ?? '');
  if (update.includes('attempts = attempts +')) return 'claim';
  if (update.includes('leaseExpiresAt')) return 'heartbeat';
  return 'other';
}

/** What the HTTP layer would produce for a fault: an HTTP error response, or a thrown network error. */
function failure(service: Service, kind: FaultKind, phase: FaultPhase): Promise<{ response: unknown }> {
  if (kind === 'timeout') {
    const error =
      phase === 'before'
        ? Object.assign(new Error('connect ECONNREFUSED (injected)'), { name: 'Error', code: 'ECONNREFUSED' })
        : Object.assign(new Error('socket hang up: response lost (injected)'), {
            name: 'TimeoutError',
            code: 'ECONNRESET',
          });
    return Promise.reject(error);
  }
  const [status, type] =
    kind === 'throttle'
      ? service === 'dynamodb'
        ? [400, 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException']
        : service === 'sqs'
          ? [400, 'com.amazonaws.sqs#RequestThrottled']
          : [429, 'ThrottlingException']
      : service === 'dynamodb'
        ? [500, 'com.amazonaws.dynamodb.v20120810#InternalServerError']
        : [503, 'ServiceUnavailable'];
  const name = type.split('#').at(-1) ?? type;
  const body = JSON.stringify({ __type: type, message: `${name} (injected, ${phase})` });
  const headers: Record<string, string> = {
    'content-type': service === 'scheduler' ? 'application/json' : 'application/x-amz-json-1.0',
    'x-amzn-requestid': `injected-${Math.random().toString(36).slice(2)}`,
  };
  if (service === 'scheduler') headers['x-amzn-errortype'] = name;
  return Promise.resolve({
    response: { statusCode: status, reason: name, headers, body: Readable.from([Buffer.from(body)]) },
  });
}

/**
 * Wraps a job store: the given methods replace the store's (each gets the original, bound),
 * every other method (including ones added to `JobStore` later) goes straight through.
 *
 * @example
 * const wrapStore = (store: JobStore) =>
 *   interceptStore(store, { heartbeat: (original, input) => (input.job.leaseOwner?.startsWith('dead:') ? new Promise(() => {}) : original(input)) });
 */
export function interceptStore<S extends object>(
  store: S,
  overrides: {
    [K in keyof S]?: S[K] extends (...args: infer A) => infer R
      ? (original: (...args: A) => R, ...args: A) => R
      : never;
  },
): S {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function') return value;
      const original = (value as (...args: unknown[]) => unknown).bind(target);
      const override = (overrides as Record<PropertyKey, ((...args: unknown[]) => unknown) | undefined>)[property];
      return override ? (...args: unknown[]) => override(original, ...args) : original;
    },
  });
}

/**
 * Wraps a worker's batch handler so that a handler can "kill its worker": each record runs
 * as its own invocation inside a {@link DeadZones} scope; when the scope is killed (from the
 * probe handler, with `deadZones.killCurrent()`), that invocation is abandoned at once, like a
 * Lambda process that crashed: its record is reported as not processed (so SQS delivers it
 * again after its visibility timeout), and none of its later AWS calls (heartbeats, result
 * writes, visibility changes) ever complete.
 *
 * @example
 * startQueueRunner({ ...queue, handler: crashable(worker, deadZones, (id) => kills.push(id)) });
 */
export function crashable<E extends { Records: R[] }, R extends { messageId: string }, C>(
  worker: (event: E, context: C) => Promise<{ batchItemFailures: { itemIdentifier: string }[] }>,
  deadZones: DeadZones,
  onKilled?: (record: R) => void,
): (event: E, context: C) => Promise<{ batchItemFailures: { itemIdentifier: string }[] }> {
  return async (event, context) => {
    const failures = await Promise.all(
      event.Records.map(async (record) => {
        const { result, killed } = deadZones.run(() => worker({ ...event, Records: [record] }, context));
        const outcome = await Promise.race([
          result.then((response) => ({ killed: false as const, response })),
          killed.then(() => ({ killed: true as const })),
        ]);
        if (outcome.killed) {
          onKilled?.(record);
          return [{ itemIdentifier: record.messageId }];
        }
        return outcome.response.batchItemFailures;
      }),
    );
    return { batchItemFailures: failures.flat() };
  };
}
