/**
 * Flow control, domain side: per-key concurrency limits of a job type, how their keys are found,
 * and the port that keeps their slots. No AWS here: the DynamoDB adapter is
 * `shared/aws/dynamo-flow-slots.ts`, the worker's use of it `shared/runtime/flow-gate.ts`, and
 * docs/flow-control.md explains the design and what each path costs.
 *
 * A limit's slots are a semaphore per key value with a FIFO of waiting jobs:
 * - a job takes a slot before its attempt starts and gives it back when the attempt ends (a
 *   retry waits for its backoff without one);
 * - a job that finds no free slot takes a ticket and leaves: it does not poll. The job that gives
 *   a slot back hands it to the oldest ticket and sends that job a message;
 * - a slot belongs to the job, not to a worker: a worker that dies leaves the slot to the job's
 *   next delivery (after its lease expires), so it is never held by nobody for long.
 */
import { ValidationError } from '../errors';
import { type FairShare, fairWeight } from './fair-share';

/** Most limits one job type may have (e.g. one per tenant plus one in total). */
export const MAX_CONCURRENCY_LIMITS = 2;
/** Largest `limit`: the slot item lists its holders, so it grows with the limit (see docs). */
export const MAX_CONCURRENCY_LIMIT = 1000;
/** Longest key value, in characters. */
export const MAX_FLOW_KEY_LENGTH = 256;
/**
 * How long a waiting job's message stays away before it looks again, in case the message that
 * should have woken it was lost (SQS's longest delay). A wake normally comes long before.
 */
export const WAIT_RECHECK_SECONDS = 900;

/**
 * One concurrency limit of a job type.
 *
 * @example
 * // at most 2 running per tenant, and 10 in total
 * concurrency: [{ limit: 2, key: (p) => p.tenantId }, { limit: 10 }]
 */
export interface ConcurrencyLimit<Payload = never> {
  /** Most jobs of one key value that run at once, across all workers. 1 to {@link MAX_CONCURRENCY_LIMIT}. */
  readonly limit: number;
  /**
   * The key value of a job, from its payload: jobs of different values do not count against
   * each other. A job enqueued with `concurrencyKey` uses that instead (first keyed limit only).
   * @default one key for the whole job type
   */
  key?(payload: Payload): string;
  /**
   * Shares this limit fairly between the values it gives (a tenant, say), in place of a key: a
   * freed place goes to the waiting value with the lowest running count relative to its
   * {@link ConcurrencyLimit.weight}, and the values of equal share take turns. Jobs of one value
   * keep their order (priority, then age). Computed at enqueue; a job whose value cannot be
   * computed is refused (400 `invalid_fair_key`). Not with `key`: pair it with a keyed limit
   * for a cap per value. At most one limit of a type takes it.
   * @default no fair share: a freed place goes to the job first in line
   *
   * @example
   * // 20 in total, shared fairly between tenants, and at most 5 per tenant
   * concurrency: [{ limit: 5, key: (p) => p.tenantId }, { limit: 20, fairBy: (p) => p.tenantId }]
   */
  fairBy?(payload: Payload): string;
  /**
   * The weight of a fair key (see {@link ConcurrencyLimit.fairBy}): a key of weight 3 gets three
   * times the places of a key of weight 1 while both wait. More than 0, at most 1,000; a weight
   * that throws or is out of range counts as 1. A weight set at run time
   * (`PUT /types/{type}/keys/{key}/limits`) replaces it for its key.
   * @default 1 for every key
   *
   * @example
   * weight: (tenantId) => (tenantId.startsWith('pro-') ? 3 : 1)
   */
  weight?(fairKey: string): number;
}

/** Checks a type's concurrency limits when it is declared. Returns the message of the first problem, if any. */
export function concurrencyProblem(limits: unknown): string | undefined {
  if (!Array.isArray(limits)) return 'concurrency must be an array of { limit, key? }';
  if (limits.length === 0 || limits.length > MAX_CONCURRENCY_LIMITS) {
    return `concurrency takes 1 to ${MAX_CONCURRENCY_LIMITS} limits (got ${limits.length})`;
  }
  for (const [i, raw] of limits.entries()) {
    const entry = raw as { limit?: unknown; key?: unknown; fairBy?: unknown; weight?: unknown } | null;
    if (typeof entry !== 'object' || entry === null) return `concurrency[${i}] must be an object`;
    const { limit, key, fairBy, weight } = entry;
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_CONCURRENCY_LIMIT) {
      return `concurrency[${i}].limit must be an integer from 1 to ${MAX_CONCURRENCY_LIMIT}`;
    }
    if (key !== undefined && typeof key !== 'function')
      return `concurrency[${i}].key must be a function of the payload`;
    if (fairBy !== undefined && typeof fairBy !== 'function') {
      return `concurrency[${i}].fairBy must be a function of the payload`;
    }
    if (fairBy !== undefined && key !== undefined) {
      return `concurrency[${i}] has both key and fairBy: fairBy shares one limit between keys; add a keyed limit for a cap per key`;
    }
    if (weight !== undefined && (typeof weight !== 'function' || fairBy === undefined)) {
      return `concurrency[${i}].weight must be a function of the fair key, on a limit with fairBy`;
    }
  }
  if (limits.filter((l: { fairBy?: unknown }) => l.fairBy !== undefined).length > 1) {
    return 'concurrency has two limits with fairBy: one limit of a type is shared fairly';
  }
  // a limit with fairBy has no key either: its one slot counts every job of the type
  if (limits.filter((l: { key?: unknown }) => l.key === undefined).length > 1) {
    return 'concurrency has two limits without a key: they would count the same jobs';
  }
  return undefined;
}

/** Why a key value cannot be used, or undefined when it can. */
export function flowKeyProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return `must be a string (got ${value === null ? 'null' : typeof value})`;
  if (value.length === 0 || value.length > MAX_FLOW_KEY_LENGTH) {
    return `must be 1 to ${MAX_FLOW_KEY_LENGTH} characters (got ${value.length})`;
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we refuse
  if (/[\u0000-\u001f\u007f]/.test(value)) return 'must not contain control characters';
  // a lone surrogate is no character: DynamoDB cannot store it as UTF-8 (the item would become
  // unreadable to every job of the key's slot)
  if (/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(value)) {
    return 'must be well-formed Unicode (it has a lone surrogate)';
  }
  return undefined;
}

/** The key a limit without a `key` function uses: one for the whole job type. */
export const WHOLE_TYPE_KEY = '*';

/**
 * Computes a key value from a payload with a job type's key function. Throws ValidationError
 * (field `payload`, code `code`) when the function throws or gives an unusable value.
 */
export function computeFlowKey(
  key: (payload: unknown) => string,
  payload: unknown,
  label: string,
  code: string,
): string {
  let value: unknown;
  try {
    value = key(payload);
  } catch (error) {
    throw new ValidationError(
      `the job type could not compute its ${label} from this payload`,
      [{ path: 'payload', message: `${label} threw: ${error instanceof Error ? error.message : String(error)}` }],
      code,
    );
  }
  const problem = flowKeyProblem(value);
  if (problem) {
    throw new ValidationError(
      `the job type computed an unusable ${label} from this payload`,
      [{ path: 'payload', message: `${label} ${problem}` }],
      code,
    );
  }
  return value as string;
}

/** Checks a key value given at enqueue (`field`); throws ValidationError with `code` when unusable. */
export function checkGivenKey(value: string, field: string, code: string): string {
  const problem = flowKeyProblem(value);
  if (problem) throw new ValidationError(`${field} is not a usable key`, [{ path: field, message: problem }], code);
  return value;
}

/**
 * The key values of a job, one per limit, in the limits' order; for a limit with `fairBy`, the
 * job's fair key (its slot is the whole type's). `override` (the enqueue request's
 * `concurrencyKey`) replaces the first keyed limit's value. Throws ValidationError (field
 * `payload`, or `concurrencyKey`) when a key function throws or gives a bad value.
 */
export function resolveFlowKeys(
  limits: readonly ConcurrencyLimit<unknown>[],
  payload: unknown,
  override?: string,
): string[] {
  let overridden = false;
  return limits.map((limit, i) => {
    if (limit.fairBy) return computeFlowKey(limit.fairBy, payload, `concurrency[${i}].fairBy`, 'invalid_fair_key');
    if (!limit.key) return WHOLE_TYPE_KEY;
    if (override !== undefined && !overridden) {
      overridden = true;
      return checkGivenKey(override, 'concurrencyKey', 'invalid_concurrency_key');
    }
    return computeFlowKey(limit.key, payload, `concurrency[${i}].key`, 'invalid_concurrency_key');
  });
}

/** What a singleton does with a job whose key already has a job running (or in line). */
export const SINGLETON_MODES = ['skip', 'queue', 'cancel-running'] as const;
export type SingletonMode = (typeof SINGLETON_MODES)[number];

/** Names of scopes shared by job types: like a job type's name. */
export const SCOPE_NAME_PATTERN = /^[a-z][a-z0-9-]{0,39}$/;

/**
 * A singleton: at most one job of a key value runs at once in its scope, across every job type
 * that names the scope.
 *
 * @example
 * // one sync per account at a time; a newer one replaces a running one
 * singleton: { key: (p) => p.accountId, mode: 'cancel-running' }
 * // `report` and `export` never run at once for one account
 * singleton: { key: (p) => p.accountId, mode: 'queue', scope: 'account-io' }
 */
export interface SingletonOptions<Payload = never> {
  /**
   * - `queue`: the new job waits its turn (in order, without polling);
   * - `skip`: the new job ends `skipped` (with the running job's id) without running;
   * - `cancel-running`: the running job is cancelled (its handler's `ctx.signal` aborts), and
   *   the new job starts once it has stopped.
   */
  readonly mode: SingletonMode;
  /** The key value of a job, from its payload. @default one key for the whole scope */
  key?(payload: Payload): string;
  /**
   * The scope's name. Job types that give the same scope share its keys: two such jobs of one
   * key value never run at once, whatever their types.
   * @default the job type's name
   */
  readonly scope?: string;
}

/** Checks a type's singleton when it is declared. Returns the message of the first problem, if any. */
export function singletonProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return 'singleton must be an object { mode, key?, scope? }';
  const { mode, key, scope } = value as { mode?: unknown; key?: unknown; scope?: unknown };
  if (!(SINGLETON_MODES as readonly unknown[]).includes(mode)) {
    return `singleton.mode must be one of ${SINGLETON_MODES.join(', ')}`;
  }
  if (key !== undefined && typeof key !== 'function') return 'singleton.key must be a function of the payload';
  if (scope !== undefined && (typeof scope !== 'string' || !SCOPE_NAME_PATTERN.test(scope))) {
    return `singleton.scope must match ${SCOPE_NAME_PATTERN}`;
  }
  return undefined;
}

/** A job's singleton key value: `override` (the enqueue request's `singletonKey`), or from its payload. */
export function resolveSingletonKey(
  singleton: Pick<SingletonOptions<unknown>, 'key'>,
  payload: unknown,
  override?: string,
): string {
  if (override !== undefined) return checkGivenKey(override, 'singletonKey', 'invalid_singleton_key');
  if (!singleton.key) return WHOLE_TYPE_KEY;
  return computeFlowKey(singleton.key, payload, 'singleton.key', 'invalid_singleton_key');
}

/** The slot scope of a singleton: `@<scope name>`, apart from every type's limits (`<type>#<i>`). */
export function singletonScope(type: string, singleton: Pick<SingletonOptions, 'scope'>): string {
  return `@${singleton.scope ?? type}`;
}

/** One key value of one limit: the unit slots are counted in. */
export interface Slot {
  /** `<type>#<limit index>` for a concurrency limit, `@<scope name>` for a singleton. */
  scope: string;
  key: string;
  limit: number;
  /** Only for a singleton's slot (limit 1): its mode. */
  singleton?: SingletonMode;
  /** Only for a limit with `fairBy` (its key is `*`): the job's fair key and the keys' weights. */
  fair?: FairShare;
}

/**
 * The slots a job of `type` needs, in the order they are taken (the limits' order, so no two jobs
 * wait on each other in a cycle). A limit with `fairBy` has one slot for the type (`*`), shared by
 * the fair keys: `keys[i]` is then the job's fair key.
 */
export function slotsOf(
  type: string,
  limits: readonly Pick<ConcurrencyLimit<unknown>, 'limit' | 'fairBy' | 'weight'>[],
  keys: readonly string[],
): Slot[] {
  return limits.map((l, i) => {
    const scope = `${type}#${i}`;
    if (!l.fairBy) return { scope, key: keys[i] ?? WHOLE_TYPE_KEY, limit: l.limit };
    const weight = l.weight?.bind(l);
    const fair = { key: keys[i] ?? WHOLE_TYPE_KEY, weightOf: (key: string) => fairWeight(weight, key) };
    return { scope, key: WHOLE_TYPE_KEY, limit: l.limit, fair };
  });
}

/** A job that was handed a slot while it waited: it is sent a message so it starts. */
export interface Admitted {
  jobId: string;
  type: string;
  /** Its ticket, in an oldest-first line. */
  ticket?: number;
  /** Its entry's key (`rankKey` in shared/core/priority.ts), in a ranked line. */
  rank?: string;
  /** Its fair key, in a slot shared fairly: it names the group of the message that wakes it. */
  fair?: string;
}

/**
 * A job holding a slot, since when (epoch ms: taken, or handed to it while it waited), and for
 * which attempt: the lease token its claim gives (0 while it was handed the slot and has not
 * taken it yet). Only that attempt gives the slot back, so an older attempt of the same job that
 * ends late cannot free the slot a newer one runs on.
 */
export interface Holder {
  jobId: string;
  since: number;
  token: number;
  /** Its fair key, in a slot shared fairly (a limit with `fairBy`). */
  fair?: string;
  /** The line it was admitted from, when not its key's own: the shared line (see `fairLineOf`). */
  fairLine?: string;
}

export type AcquireResult =
  /** The job holds a slot; `fresh` when this call took it (it did not hold one before). */
  | { kind: 'held'; fresh: boolean }
  /**
   * No slot: the job waits with `ticket` (a new one, or the one it gave), or, in a ranked line, under
   * its `rank`. `holders` are the jobs that held the slots when it looked; `first` when no job is
   * ahead of it (in a ranked line: when no other job waited as it joined).
   */
  | {
      kind: 'waiting';
      ticket?: number;
      rank?: string;
      first: boolean;
      holders: Holder[];
      /** The limit that holds, when one set at run time replaces the spec's (see {@link effectiveLimit}). */
      limit?: number;
    }
  /** No free slot, and the call asked not to wait (`wait: false`): no ticket was taken. */
  | { kind: 'busy'; holders: Holder[] };

/** What a slot's item says now. */
export interface SlotState {
  /** Jobs holding a slot (running, or handed a slot and about to start), by job id. */
  holders: Holder[];
  /** Jobs waiting: tickets taken and not yet handed a slot, and the entries of the ranked line. */
  waiting: number;
  /** Tickets handed out so far, and handed a slot so far: the next ticket is `issued`, the next to get a slot `admitted`. */
  issued: number;
  admitted: number;
  /** In a slot shared fairly: the jobs in line per fair key. */
  waitingByFairKey?: Record<string, number>;
  /** In a slot shared fairly: the weights set at run time, per fair key. */
  fairWeights?: Record<string, number>;
  /**
   * The limit set at run time for this key (`PUT /types/{type}/keys/{key}/limits`), who set it and
   * when (epoch ms). Absent: the spec's limit holds.
   */
  runtimeLimit?: RuntimeLimit;
}

/** A concurrency limit set at run time on one slot, in place of the spec's. */
export interface RuntimeLimit {
  limit: number;
  /** Who set it (the caller's principal ARN, or `anonymous`). */
  by: string;
  /** When it was set (epoch ms). */
  at: number;
}

/** The limit a slot holds to: the one set at run time when there is one, the spec's otherwise. */
export function effectiveLimit(slot: Pick<Slot, 'limit'>, runtime: Pick<RuntimeLimit, 'limit'> | undefined): number {
  return runtime?.limit ?? slot.limit;
}

/** Most jobs {@link FlowSlots.line} lists. */
export const MAX_LINE_LISTED = 50;

/** A job in a slot's line, as {@link FlowSlots.line} lists it: its ticket, or its rank (and fair key). */
export interface InLine {
  jobId: string;
  type: string;
  ticket?: number;
  rank?: string;
  fair?: string;
}

/** What {@link FlowSlots.setWeight} is given. */
export interface SetWeightInput {
  /** The fair limit's slot (its key is `*`). */
  slot: Pick<Slot, 'scope' | 'key'>;
  fairKey: string;
  /** The weight (see `fairWeightProblem`); undefined removes it (the spec's holds again). */
  weight: number | undefined;
  /** Who sets it, and when (epoch ms): for the caller's audit; the item keeps the value only. */
  by: string;
  now: number;
}

/** What {@link FlowSlots.setLimit} is given. */
export interface SetLimitInput {
  slot: Pick<Slot, 'scope' | 'key'>;
  /** The new limit; undefined removes the one set at run time. */
  limit: number | undefined;
  /** Who sets it (recorded with it). */
  by: string;
  /** When (epoch ms; recorded with it). */
  now: number;
}

/** What {@link FlowSlots.acquire} is given. */
export interface AcquireInput {
  slot: Slot;
  jobId: string;
  type: string;
  now: number;
  /** The lease token the attempt's claim gives (the job's `leaseToken` + 1 before it). */
  token: number;
  /** The job's place in an oldest-first line, when it already waits there. */
  ticket?: number;
  /**
   * For a ranked line (a type with priorities): the job's entry key (`rankKey` in shared/core/priority.ts). The job
   * joins the line under it when it has to wait, and keeps its place when it already waits there.
   */
  rank?: string;
  /**
   * The rank the job waits under in the ranked line, as its `waitingFor` remembers it: a read
   * tells whether it still does (no write). When it does not any more (its entry was admitted),
   * it joins again under `rank`, its rank now.
   */
  waitsAs?: string;
  /** false: when no slot is free, take no ticket and answer `busy` (a `skip` singleton). @default true */
  wait?: boolean;
}

/**
 * Keeps the slots of concurrency limits. Every method is safe to call again after a lost
 * response: taking a slot the job holds, giving back one it does not hold, and admitting into a
 * full slot change nothing.
 */
export interface FlowSlots {
  /**
   * Takes a slot for `jobId`'s attempt `token` when one is free and no ticket waits; otherwise
   * the job waits with a ticket. A job that holds a slot for an older attempt (or was handed one)
   * keeps it, now for `token`; one held for a newer attempt is left alone (`held`, not fresh: the
   * claim will refuse this one). A job that gives its `ticket` keeps its place; a ticket already
   * passed (skipped because its job was slow to write it) gets a new one.
   */
  acquire(input: AcquireInput): Promise<AcquireResult>;
  /**
   * `acquire` for each input, in order, with the same answers (new jobs of one slot taking their
   * places at enqueue): an adapter may join the ones that wait with fewer writes. Without it,
   * {@link acquireEach} calls `acquire` once per input. `onAnswer` is told each answer (by the
   * input's index) as it is settled: a call that fails part-way has told the caller which jobs
   * already hold their place or wait in line.
   */
  acquireMany?(
    inputs: readonly AcquireInput[],
    onAnswer?: (index: number, answer: AcquireResult) => void,
  ): Promise<AcquireResult[]>;
  /**
   * Gives back `jobId`'s slot: only when it is held for attempt `token`, when given (any attempt
   * otherwise: a finished or gone job's). Returns false when it held none; true when it gave it
   * back, including by an earlier try of the same call whose answer was lost.
   */
  release(input: { slot: Slot; jobId: string; token?: number }): Promise<boolean>;
  /**
   * Hands free slots on: to the oldest tickets, in order, then to the ranked line's entries, lowest
   * rank first; returns the jobs admitted. `onAdmitted` is called for each as it is admitted,
   * before the next admission (the places an adapter hands on in one write are told at once): a
   * call that fails part-way has told the caller of every place it handed on (so each of those
   * jobs is sent its message), and the caller's retry hands on the rest.
   */
  admit(input: { slot: Slot; now: number; onAdmitted?: (admitted: Admitted) => Promise<void> }): Promise<Admitted[]>;
  /** Reads the slot's state (strongly consistent). */
  state(slot: Pick<Slot, 'scope' | 'key'>): Promise<SlotState>;
  /**
   * Sets the slot's limit at run time (`limit`: 1 to {@link MAX_CONCURRENCY_LIMIT}), in place of
   * the spec's, recording `by` and `now`; `limit: undefined` removes it (the spec's holds again).
   * Creates the slot's item when the key has none. It holds from the next take: a lowered limit
   * lets the current holders finish, and a raised one lets places free only for an
   * {@link FlowSlots.admit} (the caller's) or a newcomer. Safe to call again.
   */
  setLimit(input: SetLimitInput): Promise<void>;
  /**
   * Sets a fair key's weight at run time on a slot shared fairly, in place of the spec's `weight`;
   * `weight: undefined` removes it. It holds from the next admission. Creates the slot's item
   * when the type has none. Safe to call again.
   */
  setWeight(input: SetWeightInput): Promise<void>;
  /**
   * The jobs waiting on the slot, first to be served first, at most `max`: the oldest-first line's
   * tickets, then the ranked line's entries by rank; in a slot shared fairly, only `slot.fair`'s
   * key's entries (which key goes next depends on what runs when a place frees). Eventually
   * consistent: a view, not a promise.
   */
  line(input: { slot: Pick<Slot, 'scope' | 'key' | 'fair'>; max: number }): Promise<InLine[]>;
}

/**
 * `slots.acquireMany` when the port has it, else one `acquire` per input, in order; `onAnswer` is
 * told each answer as it is settled (see {@link FlowSlots.acquireMany}).
 *
 * @example
 * const got: AcquireResult[] = [];
 * await acquireEach(slots, inputs, (i, answer) => { got[i] = answer; }).catch(() => undefined);
 * // got holds the answers settled before a failure
 */
export async function acquireEach(
  slots: FlowSlots,
  inputs: readonly AcquireInput[],
  onAnswer?: (index: number, answer: AcquireResult) => void,
): Promise<AcquireResult[]> {
  if (slots.acquireMany) return await slots.acquireMany(inputs, onAnswer);
  const out: AcquireResult[] = [];
  for (const input of inputs) {
    const answer = await slots.acquire(input);
    onAnswer?.(out.length, answer);
    out.push(answer);
  }
  return out;
}
