/**
 * In-memory stand-ins for the domain ports (no network), for the unit tests and the testing
 * kit's in-memory mode (memory-platform.ts).
 *
 * `FakeJobStore` enforces the same conditions as the DynamoDB adapter
 * (`shared/aws/dynamo-job-store.ts`): a claim is one conditional write, judged by the claim rule
 * the adapter compiles its condition from (`claimVerdict`, shared/core/claim-rule.ts), and every
 * write after a claim is fenced by the lease token and the `running` state. Jobs are stored as JSON text
 * and rebuilt on read, as the adapter does, so callers never share objects with the store.
 * Each job also carries the due-index attributes (`dueBucket`, `dueAt`) the adapter writes: at
 * create for a far-future job (`createDueAttributes`), at an operator retry, and nothing else.
 * The contract suite (`test/contract/job-store.contract.ts`) runs against this fake and the
 * adapter alike, so the two cannot drift apart.
 */
import { claimVerdict } from '../../shared/core/claim-rule';
import { createDueAttributes } from '../../shared/core/due';
import { type AttemptError, appendError, type Job, type JobMessage } from '../../shared/core/job';
import { isOwnAppliedEnd, leaseHeld, wokenFor } from '../../shared/core/lease';
import { addCost, type JobCost, NO_COST } from '../../shared/core/metrics';
import {
  type ClaimInput,
  type ClaimResult,
  type EndWritten,
  type ExpireInput,
  type FailInput,
  type HeartbeatInput,
  type JobQueue,
  type JobScheduler,
  type JobStore,
  type MarkWaitingInput,
  type ProgressInput,
  type QueueEntry,
  type QueueEntryOutcome,
  type RetryInput,
  type SkipInput,
  type SucceedInput,
  type SuspendInput,
  sendBatchGroups,
  type WakeInput,
} from '../../shared/core/ports';
import { isPastDispatchBy } from '../../shared/core/scheduling';
import type { JobState } from '../../shared/core/states';
import { LeaseLostError } from '../../shared/errors';

const iso = (ms: number) => new Date(ms).toISOString();

/** The due-index attributes of a stored item (absent unless a rare path wrote them; a finished job keeps them). */
export interface DueAttributes {
  dueBucket?: string;
  dueAt?: number;
}

/** JSON round trip, like the adapter's marshall/unmarshall: drops `undefined` fields, copies deeply. */
function stored<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** Rebuilds a job as `fromItem` does: `lastError` is derived from the error history. */
function read(job: Job): Job {
  const copy = stored(job);
  delete copy.lastError;
  const last = copy.errors.at(-1);
  if (last) copy.lastError = last;
  return copy;
}

/**
 * The history after a retry or fail that records `errors.at(-1)` (the adapter writes only that
 * entry, as an item of its own): the stored history plus that entry, the newest
 * `ERROR_HISTORY_LIMIT` kept.
 */
function recorded(history: AttemptError[], errors: readonly AttemptError[]): AttemptError[] {
  const last = errors.at(-1);
  return last ? appendError(history, last) : history;
}

/**
 * The cost an attempt-ending write records, as the adapter's contract has it: the claimed job's,
 * plus the delivery's, plus one request for the write and one for an error item; here every
 * write is one write unit (the adapter estimates them from item sizes).
 */
function costAfter(job: Job, delivery: JobCost, errors: readonly AttemptError[]): JobCost {
  const own = errors.length > 0 ? { requests: 2, writeUnits: 2 } : { requests: 1, writeUnits: 1 };
  return addCost(addCost(job.cost ?? NO_COST, delivery), own);
}

type StoreMethod =
  | 'create'
  | 'get'
  | 'claim'
  | 'heartbeat'
  | 'progress'
  | 'succeed'
  | 'retry'
  | 'fail'
  | 'expire'
  | 'markWaiting'
  | 'skip'
  | 'suspend'
  | 'wake';

/** The writes that end an attempt, with the state each moves the job to. */
const ENDS = { succeed: 'succeeded', retry: 'retrying', fail: 'failed', suspend: 'waiting' } as const satisfies Partial<
  Record<StoreMethod, JobState>
>;

export class FakeJobStore implements JobStore {
  private readonly items = new Map<string, { job: Job; due: DueAttributes }>();
  private readonly failures = new Map<StoreMethod, unknown[]>();
  /** Every call, in order, with its method name. */
  readonly calls: { method: StoreMethod; id: string }[] = [];

  /**
   * Puts a job in the store as is, bypassing every condition (an unconditional put). Its due
   * attributes are those the adapter's create writes (`createDueAttributes(job)`) unless given.
   */
  seed(job: Job, due: DueAttributes = createDueAttributes(job)): void {
    this.items.set(job.id, { job: stored(job), due: stored(due) });
  }

  /** The stored job (a copy), or undefined. Does not count as a call. */
  peek(id: string): Job | undefined {
    const item = this.items.get(id);
    return item ? read(item.job) : undefined;
  }

  /** Every stored job (copies), in no particular order. Not a call. */
  all(): Job[] {
    return [...this.items.values()].map((item) => read(item.job));
  }

  /** The stored due attributes (a copy), or undefined when there is no such job. Not a call. */
  due(id: string): DueAttributes | undefined {
    const item = this.items.get(id);
    return item ? stored(item.due) : undefined;
  }

  /** Makes the next `times` calls of `method` throw `error` before touching the store. */
  failNext(method: StoreMethod, error: unknown, times = 1): void {
    const queue = this.failures.get(method) ?? [];
    for (let i = 0; i < times; i++) queue.push(error);
    this.failures.set(method, queue);
  }

  private enter(method: StoreMethod, id: string): void {
    this.calls.push({ method, id });
    const queue = this.failures.get(method);
    if (queue && queue.length > 0) throw queue.shift();
  }

  /** Condition `attribute_not_exists(pk) OR expiresAt < createdAt` (in seconds): past retention is free. */
  async create(job: Job): Promise<{ created: true } | { created: false; existing: Job }> {
    this.enter('create', job.id);
    const existing = this.items.get(job.id)?.job;
    const retained = existing?.expiresAt === undefined || existing.expiresAt * 1000 >= Date.parse(job.createdAt);
    if (existing && retained) return { created: false, existing: read(existing) };
    this.seed(job);
    return { created: true };
  }

  async get(id: string): Promise<Job | undefined> {
    this.enter('get', id);
    return this.peek(id);
  }

  /** The claim rule as the adapter's condition states it (`claimVerdict`, from the same clauses). */
  async claim(input: ClaimInput): Promise<ClaimResult> {
    this.enter('claim', input.id);
    const item = this.items.get(input.id);
    if (!item) return { kind: 'missing' };
    const old = read(item.job);
    const { now } = input;
    const verdict = claimVerdict(old, input.type, now);
    if (verdict.kind !== 'claim') {
      // Our own claim, applied on an earlier try whose response was lost.
      if (old.state === 'running' && old.leaseOwner === input.owner) return { kind: 'claimed', job: old };
      return verdict;
    }
    const leaseExpiresAt = now + input.leaseMs;
    const next: Job = {
      ...old,
      state: 'running',
      attempts: old.attempts + 1,
      leaseToken: old.leaseToken + 1,
      leaseOwner: input.owner,
      leaseExpiresAt,
      leaseMessage: input.messageId ?? '-',
      startedAt: iso(now),
      updatedAt: iso(now),
    };
    delete next.waitingFor;
    delete next.waitSignal;
    // a claim writes no due entry: the creation sweep or an existing entry covers the job
    this.seed(next, item.due);
    return { kind: 'claimed', job: read(next) };
  }

  /**
   * Condition `leaseToken = :token AND #state = :running`. When it fails, a write that ends the
   * attempt counts as applied only if the stored job is in its target state under the same token
   * and was written by the same writer; anything else throws LeaseLostError.
   */
  private fenced(
    method: StoreMethod,
    job: Job,
    update: (current: Job) => DueAttributes | undefined,
    writer?: string,
    /** The state this end moves the job to, when not its method's (a fail that holds). */
    ends?: JobState,
  ): void {
    this.enter(method, job.id);
    const item = this.items.get(job.id);
    const current = item?.job;
    if (!item || !current || current.leaseToken !== job.leaseToken || current.state !== 'running') {
      const state = ends ?? (method in ENDS ? ENDS[method as keyof typeof ENDS] : undefined);
      if (current && state && writer !== undefined && isOwnAppliedEnd(current, job.leaseToken, { state, writer }))
        return;
      throw new LeaseLostError(job.id, job.leaseToken);
    }
    const next = stored(current);
    const due = update(next);
    this.seed(next, due ?? item.due);
  }

  async heartbeat({ job, now, leaseMs }: HeartbeatInput): Promise<void> {
    this.fenced('heartbeat', job, (j) => {
      j.leaseExpiresAt = now + leaseMs;
      return undefined;
    });
  }

  async progress({ job, progress }: ProgressInput): Promise<void> {
    this.fenced('progress', job, (j) => {
      j.progress = { ...progress };
      return undefined;
    });
  }

  async succeed(input: SucceedInput): Promise<EndWritten> {
    this.fenced(
      'succeed',
      input.job,
      (j) => {
        j.state = 'succeeded';
        j.finishedAt = iso(input.now);
        j.updatedAt = iso(input.now);
        j.expiresAt = input.expiresAt;
        j.lastWriter = input.writer;
        if (input.result !== undefined) j.result = input.result;
        if (input.cost) j.cost = costAfter(input.job, input.cost, []);
        delete j.leaseOwner;
        delete j.leaseExpiresAt;
        return undefined;
      },
      input.writer,
    );
    return { childCount: this.peek(input.job.id)?.childCount ?? 0 };
  }

  async retry(input: RetryInput): Promise<void> {
    this.fenced(
      'retry',
      input.job,
      (j) => {
        if (input.refund) j.attempts = Math.max(0, input.job.attempts - 1);
        j.state = 'retrying';
        j.runAt = iso(input.runAt);
        j.updatedAt = iso(input.now);
        j.errors = recorded(j.errors, input.errors);
        j.lastWriter = input.writer;
        if (input.cost) j.cost = costAfter(input.job, input.cost, input.errors);
        delete j.leaseOwner;
        delete j.leaseExpiresAt;
        return undefined;
      },
      input.writer,
    );
  }

  async fail(input: FailInput): Promise<void> {
    const state = input.hold ? 'held' : 'failed';
    this.fenced(
      'fail',
      input.job,
      (j) => {
        j.state = state;
        j.finishedAt = iso(input.now);
        j.updatedAt = iso(input.now);
        j.errors = recorded(j.errors, input.errors);
        j.expiresAt = input.expiresAt;
        j.lastWriter = input.writer;
        if (input.cost) j.cost = costAfter(input.job, input.cost, input.errors);
        delete j.leaseOwner;
        delete j.leaseExpiresAt;
        return undefined;
      },
      input.writer,
      state,
    );
  }

  /** The adapter's condition: `scheduled`/`queued`, no attempt started, `dispatchBy` passed. */
  async suspend(input: SuspendInput): Promise<void> {
    this.fenced(
      'suspend',
      input.job,
      (j) => {
        j.attempts = Math.max(0, input.job.attempts - 1);
        j.state = 'waiting';
        j.runAt = iso(input.runAt);
        j.updatedAt = iso(input.now);
        j.lastWriter = input.writer;
        j.resumes = (input.job.resumes ?? 0) + 1;
        j.waitingFor = { ...input.waitingFor };
        if (input.waitingFor.kind === 'signal') j.waitSignal = input.waitingFor.key;
        else delete j.waitSignal;
        if (input.pendingParents !== undefined) {
          j.pendingParents = input.pendingParents;
          delete j.parentsResolved;
        }
        if (input.cost) j.cost = costAfter(input.job, input.cost, []);
        delete j.leaseOwner;
        delete j.leaseExpiresAt;
        return undefined;
      },
      input.writer,
    );
  }

  /** The adapter's condition: `waiting`, and `waitSignal` is the signal's name. */
  async wake(input: WakeInput): Promise<Job | undefined> {
    this.enter('wake', input.id);
    const item = this.items.get(input.id);
    const current = item?.job;
    if (!item || !current) return undefined;
    if (current.state !== 'waiting' || current.waitSignal !== input.signal) {
      return wokenFor(current, input.signal, input.now) ? read(current) : undefined;
    }
    const next = stored(current);
    next.runAt = iso(input.now);
    delete next.waitSignal;
    this.seed(next, item.due);
    return read(next);
  }

  async markWaiting(input: MarkWaitingInput): Promise<boolean> {
    this.enter('markWaiting', input.job.id);
    const current = this.items.get(input.job.id)?.job;
    if (!current) return false;
    const takeover =
      input.now !== undefined &&
      current.state === 'running' &&
      current.leaseExpiresAt !== undefined &&
      !leaseHeld(current, input.now);
    if (!takeover && !['scheduled', 'queued', 'retrying', 'waiting'].includes(current.state)) return false;
    this.seed({ ...current, waitingFor: { ...input.waitingFor } }, this.items.get(input.job.id)?.due ?? {});
    return true;
  }

  async expire(input: ExpireInput): Promise<boolean> {
    this.enter('expire', input.job.id);
    const current = this.items.get(input.job.id)?.job;
    if (!current || !isPastDispatchBy(current, input.now)) return false;
    this.seed(
      {
        ...current,
        state: 'expired',
        finishedAt: iso(input.now),
        updatedAt: iso(input.now),
        expiresAt: input.expiresAt,
      },
      this.items.get(input.job.id)?.due ?? {},
    );
    return true;
  }

  /** The adapter's condition: `scheduled`/`queued`, no attempt in the series, the same token. */
  async skip(input: SkipInput): Promise<boolean> {
    this.enter('skip', input.job.id);
    const current = this.items.get(input.job.id)?.job;
    if (
      !current ||
      !['scheduled', 'queued'].includes(current.state) ||
      current.attempts !== 0 ||
      current.leaseToken !== input.job.leaseToken ||
      (input.beforeSeq !== undefined && current.debounceSeq !== undefined && current.debounceSeq >= input.beforeSeq)
    ) {
      return false;
    }
    const next: Job = {
      ...current,
      state: 'skipped',
      skipReason: { ...input.reason },
      finishedAt: iso(input.now),
      updatedAt: iso(input.now),
      expiresAt: input.expiresAt,
    };
    delete next.waitingFor;
    this.seed(next, this.items.get(input.job.id)?.due ?? {});
    return true;
  }
}

type QueueMethod = 'send' | 'sendBatch' | 'changeVisibility';

/**
 * Records what was sent and every visibility change; `failNext` makes the next call throw (for
 * `sendBatch`: makes every entry of the next call fail). `sendBatch` groups entries as the
 * adapter's SendMessageBatch calls do (`batches`), and `failEntry` fails single entries.
 */
export class FakeJobQueue implements JobQueue {
  readonly sent: {
    queueUrl: string;
    message: JobMessage;
    delaySeconds: number | undefined;
    /** Its `MessageGroupId`, when it was sent in one (as SQS keeps it, and returns it on receive). */
    groupId?: string;
  }[] = [];
  readonly visibility: { queueUrl: string; receiptHandle: string; seconds: number }[] = [];
  /** One row per SendMessageBatch the adapter would make: the job ids of its entries. */
  readonly batches: { queueUrl: string; ids: string[] }[] = [];
  /** An error for an entry that must fail, per entry of a `sendBatch`. */
  failEntry: (message: JobMessage) => Error | undefined = () => undefined;
  private readonly failures: { method: QueueMethod; error: unknown }[] = [];

  failNext(method: QueueMethod, error: unknown): void {
    this.failures.push({ method, error });
  }

  private check(method: QueueMethod): void {
    const i = this.failures.findIndex((f) => f.method === method);
    if (i >= 0) {
      const [failure] = this.failures.splice(i, 1);
      throw failure?.error;
    }
  }

  async send(queueUrl: string, message: JobMessage, delaySeconds?: number, groupId?: string): Promise<void> {
    this.check('send');
    this.sent.push({ queueUrl, message: { ...message }, delaySeconds, ...(groupId === undefined ? {} : { groupId }) });
  }

  async sendBatch(queueUrl: string, entries: readonly QueueEntry[]): Promise<QueueEntryOutcome[]> {
    let whole: Error | undefined;
    try {
      this.check('sendBatch');
    } catch (error) {
      whole = error instanceof Error ? error : new Error(String(error));
    }
    const outcomes = new Array<QueueEntryOutcome>(entries.length);
    for (const group of sendBatchGroups(entries.map((e) => JSON.stringify(e.message)))) {
      this.batches.push({ queueUrl, ids: group.map((i) => entries[i]?.message.id ?? '') });
      for (const i of group) {
        const entry = entries[i] as QueueEntry;
        const error = whole ?? this.failEntry(entry.message);
        if (error) {
          outcomes[i] = { sent: false, error };
          continue;
        }
        const { groupId } = entry;
        this.sent.push({
          queueUrl,
          message: { ...entry.message },
          delaySeconds: entry.delaySeconds,
          ...(groupId === undefined ? {} : { groupId }),
        });
        outcomes[i] = { sent: true };
      }
    }
    return outcomes;
  }

  async changeVisibility(queueUrl: string, receiptHandle: string, seconds: number): Promise<void> {
    this.check('changeVisibility');
    this.visibility.push({ queueUrl, receiptHandle, seconds });
  }
}

/** One-time schedules by name; creating an existing one succeeds, as in the adapter. */
export class FakeJobScheduler implements JobScheduler {
  readonly schedules = new Map<string, { fireAt: number; queueArn: string; message: JobMessage }>();

  async scheduleJob(input: { name: string; fireAt: number; queueArn: string; message: JobMessage }): Promise<void> {
    if (!this.schedules.has(input.name)) {
      this.schedules.set(input.name, {
        fireAt: input.fireAt,
        queueArn: input.queueArn,
        message: { ...input.message },
      });
    }
  }

  async deleteJobSchedule(name: string): Promise<boolean> {
    return this.schedules.delete(name);
  }
}
