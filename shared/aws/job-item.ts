/**
 * A job's items in the table, as pure functions: the status item (its attributes, keys and
 * size), the error history items, and reading them back. The job store's writes
 * (./dynamo-job-store.ts), the control, graph and due-index adapters, and the cost meter all use
 * them.
 */
import { type AttributeValue, BatchGetItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { createDueAttributes } from '../core/due';
import {
  type AttemptError,
  ERROR_HISTORY_LIMIT,
  ERROR_SUMMARY_MESSAGE_LIMIT,
  errorSummary,
  type Job,
  type OperatorAction,
} from '../core/job';
import type { JobCost } from '../core/metrics';
import type { JobState } from '../core/states';
import { incarnationOf, isSparseState, keys, owned, SINGLE_SK } from '../core/table';
import { keyOf, N, S } from './attributes';
import { translateAwsError } from './errors';

/** A job table item as the SDK holds it. */
export type Item = Record<string, AttributeValue>;

/**
 * The attribute holding a job's `byTypeState` key in state `cancelled`, written at create: a
 * cancel copies it into `gsi2pk`, so it needs neither the type nor a read.
 */
export const CANCELLED_KEY = 'gsi2pkCancelled';

const _iso = (ms: number) => new Date(ms).toISOString();

/**
 * Key of the item holding a job's payload when it is too large for the status item: the job's
 * incarnation ({@link incarnationOf} its `createdAt`) and the payload's hash name it.
 */
export function payloadKey(id: string, createdAt: string, payloadHash: string): string {
  return owned(id, incarnationOf(createdAt), `payload#${payloadHash.slice(0, 8)}`);
}

/**
 * DynamoDB's size of an item, as it bills writes: attribute names plus values (strings as
 * UTF-8, numbers about one byte per two digits plus one, a map or list 3 bytes plus its
 * elements, a list element 1 byte more).
 */
export function itemBytes(item: Item): number {
  let bytes = 0;
  for (const [name, value] of Object.entries(item)) bytes += Buffer.byteLength(name, 'utf8') + valueBytes(value);
  return bytes;
}

function valueBytes(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S, 'utf8');
  if (value.N !== undefined) return Math.ceil(value.N.length / 2) + 1;
  if (value.B !== undefined) return value.B.length;
  if (value.M !== undefined) return 3 + itemBytes(value.M);
  if (value.L !== undefined) return 3 + value.L.reduce((sum, element) => sum + 1 + valueBytes(element), 0);
  if (value.SS !== undefined) return value.SS.reduce((sum, text) => sum + Buffer.byteLength(text, 'utf8'), 0);
  return 8;
}

/**
 * What the status item gains after its create on the way to success: the lease (owner, message,
 * expiry, start), the finish, TTL, last writer and cost (about 280 bytes), with some margin. A payload
 * stays inline only if the item still fits in 1 KB (one write unit) with all of it. A failed
 * attempt adds its error summary (up to about 330 bytes), which may take a job whose payload
 * just fits over 1 KB on the failure path only.
 */
export const STATUS_ITEM_GROWTH_BYTES = 312;

/** What a status item may weigh to be written for one write unit. */
export const ONE_WRITE_UNIT_BYTES = 1024;

/**
 * Bytes the status item may carry beside what {@link toItem} writes: a due entry and repair
 * count the supervisor may have added (`dueBucket`, `dueAt`, `repairs`), the error count, and
 * rounding in {@link itemBytes}.
 */
const UNSEEN_ATTRIBUTE_BYTES = 80;

/**
 * How many characters of `error`'s message the status item's `lastError` summary can hold while
 * the item, as the write leaves it (`after`), stays within one write unit (at most
 * ERROR_SUMMARY_MESSAGE_LIMIT; 0 when there is no room). The whole error is in its own item; the
 * summary only stands in when that item was lost. The payload is counted inline unless it is too
 * large to have been (an over-estimate only shortens the summary).
 */
export function summaryMessageRoom(after: Job, error: AttemptError): number {
  const { payload, ...rest } = after;
  const payloadJson = JSON.stringify(payload ?? null);
  const payloadPart =
    Buffer.byteLength(payloadJson, 'utf8') <= ONE_WRITE_UNIT_BYTES
      ? 'payload'.length + Buffer.byteLength(payloadJson, 'utf8')
      : 'payloadKey'.length + payloadKey(after.id, after.createdAt, after.payloadHash).length;
  const without = itemBytes(toItem({ ...rest, payload: null, errors: [] }, true)) + payloadPart;
  const room = ONE_WRITE_UNIT_BYTES - UNSEEN_ATTRIBUTE_BYTES - without;
  const bytes = (limit: number) =>
    'lastError'.length + Buffer.byteLength(JSON.stringify(errorSummary(error, limit)), 'utf8');
  // characters, not bytes: shrink by what a try is over (multi-byte characters, JSON escapes)
  let limit = Math.min(ERROR_SUMMARY_MESSAGE_LIMIT, room - bytes(0));
  for (let i = 0; i < 8 && limit > 0; i++) {
    const over = bytes(limit) - room;
    if (over <= 0) break;
    limit -= over;
  }
  return Math.max(0, limit);
}

/** Maps a job to its stored item (payload, result and errors as JSON text); `external`: the payload has its own item. */
export function toItem(job: Job, external = false): Item {
  return marshall(
    {
      pk: keys.job(job.id),
      sk: SINGLE_SK,
      id: job.id,
      type: job.type,
      state: job.state,
      payload: external ? undefined : JSON.stringify(job.payload),
      payloadKey: external ? payloadKey(job.id, job.createdAt, job.payloadHash) : undefined,
      payloadHash: job.payloadHash,
      attempts: job.attempts,
      maxAttempts: job.maxAttempts,
      createdAt: job.createdAt,
      updatedAt: job.updatedAt,
      runAt: job.runAt,
      startedAt: job.startedAt,
      finishedAt: job.finishedAt,
      leaseToken: job.leaseToken,
      leaseOwner: job.leaseOwner,
      leaseMessage: job.leaseMessage,
      leaseExpiresAt: job.leaseExpiresAt,
      lastWriter: job.lastWriter,
      // The status item keeps a summary of the last error; every error has an item of its own.
      lastError: job.errors.length > 0 ? JSON.stringify(errorSummary(job.errors.at(-1) as AttemptError)) : undefined,
      errorCount: job.errors.length > 0 ? job.errors.length : undefined,
      result: job.result === undefined ? undefined : JSON.stringify(job.result),
      backoff: job.backoff === undefined ? undefined : JSON.stringify(job.backoff),
      progress: job.progress === undefined ? undefined : JSON.stringify(job.progress),
      expiresAt: job.expiresAt,
      retries: job.retries,
      reruns: job.reruns,
      journal: job.journal,
      dispatchBy: job.dispatchBy,
      schedule: job.schedule,
      enqueuedBy: job.enqueuedBy,
      controls: job.controls,
      after: job.after,
      flowKeys: job.flowKeys,
      singletonKey: job.singletonKey,
      throttleKey: job.throttleKey,
      priority: job.priority,
      debounceKey: job.debounceKey,
      debounceWindow: job.debounceWindow,
      debounceSeq: job.debounceSeq,
      waitingFor: job.waitingFor === undefined ? undefined : JSON.stringify(job.waitingFor),
      waitSignal: job.waitSignal,
      resumes: job.resumes,
      pendingParents: job.pendingParents,
      // the edges its parents' releases counted (by index in its dependsOn), removed when it leaves `waiting`
      rel:
        job.pendingParents === undefined
          ? undefined
          : Object.fromEntries((job.parentsResolved ?? []).map((i) => [String(i), 1])),
      childCount: job.childCount,
      childrenReleased: job.childrenReleased,
      skipReason: job.skipReason === undefined ? undefined : JSON.stringify(job.skipReason),
      cost: job.cost === undefined ? undefined : { requests: job.cost.requests, writeUnits: job.cost.writeUnits },
      ...createDueAttributes(job),
      gsi1pk: keys.byType(job.type, job.id),
      gsi1sk: keys.created(job.createdAt, job.id),
      // sparse: only failed, cancelled and expired jobs are in byTypeState
      gsi2pk: isSparseState(job.state) ? keys.byTypeState(job.type, job.state, job.id) : undefined,
      // so that a cancel can set gsi2pk without knowing the type, hence without a read first
      [CANCELLED_KEY]: keys.byTypeState(job.type, 'cancelled', job.id),
    },
    { removeUndefinedValues: true },
  );
}

/**
 * Key of the `n`-th stored error of one incarnation of a job (1-based, counted over the job's whole
 * life): a later job of the same id, whose count starts again at 1, never reads it.
 */
export function errorKey(id: string, createdAt: string, n: number): string {
  return owned(id, incarnationOf(createdAt), `err#${n}`);
}

/** The write units of a write of `bytes`: 1 per KB started, at least 1. */
export function writeUnits(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / ONE_WRITE_UNIT_BYTES));
}

/**
 * Whether the job's payload has an item of its own: the test {@link DynamoJobStore.create} made,
 * repeated on the job as it was created (what it gained since taken away).
 */
export function payloadIsExternal(job: Job): boolean {
  const {
    leaseOwner: _owner,
    leaseMessage: _message,
    leaseExpiresAt: _expires,
    startedAt: _started,
    finishedAt: _finished,
    lastWriter: _writer,
    lastError: _lastError,
    result: _result,
    progress: _progress,
    waitingFor: _waiting,
    cost: _cost,
    ...created
  } = job;
  return itemBytes(toItem({ ...created, errors: [] })) + STATUS_ITEM_GROWTH_BYTES > ONE_WRITE_UNIT_BYTES;
}

/**
 * The write units of an `UpdateItem` of the status item from `before` to `after`, as DynamoDB
 * bills it: the larger of the two items' sizes, in KB started. An estimate (it cannot see the
 * attributes other writers added); what DynamoDB reported shows in the `WriteUnits` metric.
 */
export function statusWriteUnits(before: Job, after: Job): number {
  const external = payloadIsExternal(before);
  return writeUnits(Math.max(itemBytes(toItem(before, external)), itemBytes(toItem(after, external))));
}

/** How long a payload item outlives its job's `runAt`: a year of horizon plus a year of retries and retention. */
export const PAYLOAD_RETENTION_DAYS = 2 * 366;

/** The item of a job's `n`-th error. */
export function errorItemOf(job: Job, n: number, error: AttemptError, expiresAt: number): Item {
  return {
    ...keyOf(errorKey(job.id, job.createdAt, n)),
    n: N(n),
    error: S(JSON.stringify(error)),
    expiresAt: N(expiresAt),
  };
}

/** A job's status item (`job#<id>`), not an item it owns (`job#<id>#<incarnation>#err#<n>`, ...). */
export function isStatusItem(item: Item): boolean {
  const pk = item.pk?.S ?? '';
  return pk.startsWith('job#') && !pk.includes('#', 4);
}

/** The job's stored error count (the number of its last error item), 0 when none. */
export function errorCountOf(item: Item): number {
  const n = item.errorCount?.N;
  return n === undefined ? 0 : Number(n);
}

/**
 * Maps a stored status item back to a job. Its `errors` are empty unless the item predates
 * error items (it then holds the history as JSON); {@link DynamoJobStore} reads the error items.
 */
export function fromItem(item: Item): Job {
  const raw = unmarshall(item) as Record<string, unknown>;
  const errors = typeof raw.errors === 'string' ? (JSON.parse(raw.errors) as AttemptError[]) : [];
  const job: Job = {
    id: raw.id as string,
    type: raw.type as string,
    state: raw.state as JobState,
    // absent when the payload has its own item (`payloadKey`): see withHistory
    payload: typeof raw.payload === 'string' ? JSON.parse(raw.payload) : undefined,
    payloadHash: raw.payloadHash as string,
    attempts: raw.attempts as number,
    maxAttempts: raw.maxAttempts as number,
    createdAt: raw.createdAt as string,
    updatedAt: raw.updatedAt as string,
    runAt: raw.runAt as string,
    leaseToken: (raw.leaseToken as number | undefined) ?? 0,
    errors,
  };
  if (typeof raw.startedAt === 'string') job.startedAt = raw.startedAt;
  if (typeof raw.finishedAt === 'string') job.finishedAt = raw.finishedAt;
  if (typeof raw.leaseOwner === 'string') job.leaseOwner = raw.leaseOwner;
  if (typeof raw.leaseMessage === 'string') job.leaseMessage = raw.leaseMessage;
  if (typeof raw.leaseExpiresAt === 'number') job.leaseExpiresAt = raw.leaseExpiresAt;
  if (typeof raw.lastWriter === 'string') job.lastWriter = raw.lastWriter;
  if (typeof raw.result === 'string') job.result = JSON.parse(raw.result);
  if (typeof raw.expiresAt === 'number') job.expiresAt = raw.expiresAt;
  if (typeof raw.backoff === 'string') job.backoff = JSON.parse(raw.backoff);
  if (typeof raw.progress === 'string') job.progress = JSON.parse(raw.progress);
  if (typeof raw.retries === 'number') job.retries = raw.retries;
  if (typeof raw.reruns === 'number') job.reruns = raw.reruns;
  if (typeof raw.journal === 'string') job.journal = raw.journal;
  if (typeof raw.dispatchBy === 'string') job.dispatchBy = raw.dispatchBy;
  if (typeof raw.schedule === 'string') job.schedule = raw.schedule;
  if (typeof raw.enqueuedBy === 'string') job.enqueuedBy = raw.enqueuedBy;
  if (Array.isArray(raw.controls)) job.controls = raw.controls as OperatorAction[];
  if (typeof raw.after === 'string') job.after = raw.after;
  if (Array.isArray(raw.flowKeys)) job.flowKeys = raw.flowKeys as string[];
  if (typeof raw.singletonKey === 'string') job.singletonKey = raw.singletonKey;
  if (typeof raw.throttleKey === 'string') job.throttleKey = raw.throttleKey;
  if (typeof raw.priority === 'number') job.priority = raw.priority;
  if (typeof raw.debounceKey === 'string') job.debounceKey = raw.debounceKey;
  if (typeof raw.debounceWindow === 'number') job.debounceWindow = raw.debounceWindow;
  if (typeof raw.debounceSeq === 'number') job.debounceSeq = raw.debounceSeq;
  if (typeof raw.waitingFor === 'string') job.waitingFor = JSON.parse(raw.waitingFor);
  if (typeof raw.waitSignal === 'string') job.waitSignal = raw.waitSignal;
  if (typeof raw.resumes === 'number') job.resumes = raw.resumes;
  if (typeof raw.pendingParents === 'number') job.pendingParents = raw.pendingParents;
  // the edges counted so far (`rel`: index → 1), while it waits for its parents
  const rel = raw.rel as Record<string, unknown> | undefined;
  if (rel && typeof rel === 'object' && Object.keys(rel).length > 0) {
    job.parentsResolved = Object.keys(rel)
      .map(Number)
      .sort((a, b) => a - b);
  }
  if (typeof raw.childCount === 'number') job.childCount = raw.childCount;
  if (typeof raw.childrenReleased === 'number') job.childrenReleased = raw.childrenReleased;
  if (typeof raw.skipReason === 'string') job.skipReason = JSON.parse(raw.skipReason);
  const cost = raw.cost as Partial<JobCost> | undefined;
  if (typeof cost?.requests === 'number' && typeof cost.writeUnits === 'number') {
    job.cost = { requests: cost.requests, writeUnits: cost.writeUnits };
  }
  const last = typeof raw.lastError === 'string' ? (JSON.parse(raw.lastError) as AttemptError) : errors.at(-1);
  if (last) job.lastError = last;
  return job;
}

/**
 * The job of a status item with its error history: the last {@link ERROR_HISTORY_LIMIT} error
 * items, read with one strongly consistent BatchGetItem (only for a job that has errors).
 * `lastError` is the last stored error in full when its item is there, else the status item's
 * summary (an error item not written yet, or whose write was lost), which then also ends `errors`.
 */
export async function withHistory(client: DynamoDBClient, tableName: string, item: Item): Promise<Job> {
  const job = fromItem(item);
  const count = errorCountOf(item);
  const payloadAt = item.payloadKey?.S;
  if (count === 0 && payloadAt === undefined) return job;
  const first = Math.max(1, count - ERROR_HISTORY_LIMIT + 1);
  const wanted = count === 0 ? [] : Array.from({ length: count - first + 1 }, (_, i) => first + i);
  const found = new Map<number, AttemptError>();
  let pending: Item[] = wanted.map((n) => keyOf(errorKey(job.id, job.createdAt, n)));
  // A payload too large for the status item comes in the same BatchGetItem.
  if (payloadAt !== undefined) pending.push(keyOf(payloadAt));
  try {
    for (let round = 0; pending.length > 0 && round < 5; round++) {
      const out = await client.send(
        new BatchGetItemCommand({
          RequestItems: { [tableName]: { Keys: pending, ConsistentRead: true } },
        }),
      );
      for (const errorItem of out.Responses?.[tableName] ?? []) {
        if (errorItem.pk?.S === payloadAt && errorItem.payload?.S !== undefined) {
          job.payload = JSON.parse(errorItem.payload.S);
          continue;
        }
        const n = Number(errorItem.n?.N);
        if (errorItem.error?.S !== undefined) found.set(n, JSON.parse(errorItem.error.S) as AttemptError);
      }
      pending = (out.UnprocessedKeys?.[tableName]?.Keys ?? []) as Item[];
    }
  } catch (error) {
    return translateAwsError(error, 'DynamoDB BatchGetItem (error history, payload)');
  }
  // Written before the status item, never deleted before it: a missing one is a broken invariant.
  if (payloadAt !== undefined && job.payload === undefined)
    throw new Error(`job ${job.id}: its payload item ${payloadAt} is missing`);
  const stored = wanted.flatMap((n) => {
    const entry = found.get(n);
    return entry ? [entry] : [];
  });
  // The fenced write counts an error before its item is written: a reader in between (or after a
  // lost item write) gets the status item's summary as the last entry, so the history always ends
  // with the attempt that ended the job.
  const last = found.get(count);
  if (last) job.lastError = last;
  else if (count > 0 && job.lastError) stored.push(job.lastError);
  job.errors = [...job.errors, ...stored].slice(-ERROR_HISTORY_LIMIT);
  return job;
}
