import type { Backoff } from './backoff';
import type { JobCost } from './metrics';
import { isSettled, type JobState } from './states';

/** Last progress a running handler reported. */
export interface JobProgress {
  /** 0–100. */
  percent: number;
  detail?: string;
  /** ISO 8601 time it was reported. */
  at: string;
}

/** One failed attempt, as kept in a job's bounded error history. */
export interface AttemptError {
  attempt: number;
  /** ISO 8601 time of the failure. */
  at: string;
  /**
   * `error` (the handler threw), `timeout`, `invalid_payload`, `lease_expired`, `nondeterministic`
   * (a replay diverged from the journal: the job is held, see docs/workflows.md "Changing code safely").
   */
  reason: string;
  name: string;
  message: string;
  /** First lines of the stack, truncated. */
  stack?: string;
}

/** An operator's action on a job, kept on the job (the audit): what, who (the caller's ARN), when. */
export interface OperatorAction {
  /**
   * `cancel`, `retry` (`POST /jobs/{id}/retry`) or `rerun` (`POST /jobs/{id}/rerun`). A job
   * stored before reruns were told apart has its reruns recorded as `retry`.
   */
  action: 'cancel' | 'retry' | 'rerun';
  /** The caller's ARN as it signed (an assumed role's carries its session), or `anonymous`. */
  by: string;
  /** ISO 8601 time. */
  at: string;
}

/**
 * A job as the domain sees it. The DynamoDB adapter maps this to and from the stored item;
 * `payload` and `result` are kept there as JSON text.
 */
export interface Job {
  id: string;
  type: string;
  state: JobState;
  payload: unknown;
  /** SHA-256 of the canonical JSON of `{ type, payload }`: idempotency check for re-used ids. */
  payloadHash: string;
  attempts: number;
  maxAttempts: number;
  /** ISO 8601 times. */
  createdAt: string;
  updatedAt: string;
  /** When the job (or its next attempt) is due. */
  runAt: string;
  startedAt?: string;
  finishedAt?: string;
  /** Fencing token: grows by one at every claim; every later write is conditioned on it. */
  leaseToken: number;
  leaseOwner?: string;
  /** SQS message id of the delivery that holds the lease: tells its redelivery from a duplicate. */
  leaseMessage?: string;
  /**
   * Epoch ms. Kept when an operator cancels a running job (and through a retry after that), so
   * no new attempt starts while the cancelled one may still be running.
   */
  leaseExpiresAt?: number;
  /** Who wrote the last attempt-ending write (`succeed`/`retry`/`fail`): tells our own lost write from another's. */
  lastWriter?: string;
  lastError?: AttemptError;
  errors: AttemptError[];
  result?: unknown;
  /** Backoff given at enqueue; the job type's policy applies when absent. */
  backoff?: Backoff;
  progress?: JobProgress;
  /** Epoch seconds after which DynamoDB TTL may delete the finished job. */
  expiresAt?: number;
  /** Manual retries (`POST /jobs/{id}/retry`, and reruns): each starts a new series of attempts. */
  retries?: number;
  /** Reruns (`POST /jobs/{id}/rerun`): each started the job's journal again, keeping the entries before its step. */
  reruns?: number;
  /**
   * The series of the job's journal its last rerun started (the journal's key names it), absent
   * before any rerun: see `journalScopeOf` (shared/core/journal.ts).
   */
  journal?: string;
  /** ISO 8601 dispatch deadline: a job not started by then ends `expired` without running. */
  dispatchBy?: string;
  /** Name of the recurring schedule whose fire created this job run. */
  schedule?: string;
  /** Who enqueued the job: the caller's ARN (written by the create, at no extra write). */
  enqueuedBy?: string;
  /** Operator actions on the job (cancel, retry, rerun), oldest first. */
  controls?: OperatorAction[];
  /** Id of the run this one waits for (a schedule's `queue-one` overlap policy). */
  after?: string;
  /** Concurrency key values, one per limit of the job type (resolved at enqueue). */
  flowKeys?: string[];
  /** Singleton key value (resolved at enqueue), for job types with a `singleton`. */
  singletonKey?: string;
  /** Throttle key value (resolved at enqueue), for job types with a `throttle`. */
  throttleKey?: string;
  /**
   * Its priority, 0 to 10 (higher first), for job types with a `priority` option: the enqueue's,
   * else the type's default. Absent for other types (they pay no byte for it).
   */
  priority?: number;
  /** Debounce key value (resolved at enqueue), for job types with a `debounce`. */
  debounceKey?: string;
  /** When the debounce window the job joined began (epoch ms): names the window, to find its run. */
  debounceWindow?: number;
  /** The `seq` of the window open that made the job its key's run: it replaces only lower ones. */
  debounceSeq?: number;
  /**
   * Why a job has not started: a due job waits for a slot or a throttle's turn; a `waiting` job
   * for the end of its sleep or for a signal (cleared when it starts).
   */
  waitingFor?: WaitingFor;
  /** The signal a `waiting` job waits for (`ctx.waitForSignal`): a signal of that name makes it due at once. */
  waitSignal?: string;
  /** Times the job ended an attempt to wait (`ctx.sleep`, `ctx.waitForSignal`): a resumed run replays its steps. */
  resumes?: number;
  /**
   * Parents (`dependsOn`) not yet finished, while the job waits for them (state `waiting`): no
   * claim starts it until their release removes it.
   */
  pendingParents?: number;
  /**
   * While the job waits for its parents: the indexes (in its `dependsOn`) of the edges counted so
   * far (parents already finished at its creation, and releases since). The status item's `rel`.
   */
  parentsResolved?: number[];
  /** Children registered with this job (`dependsOn` naming it): the slots of its registry. */
  childCount?: number;
  /** Slots of its registry its release has handled: a finished job with fewer than `childCount` still has children to release. */
  childrenReleased?: number;
  /** Why flow control turned the job away (state `skipped`). */
  skipReason?: SkipReason;
  /**
   * What the platform's own AWS requests for the job cost, summed over the deliveries that ended
   * an attempt (each recorded by the write that ended it). See {@link JobCost}.
   */
  cost?: JobCost;
}

/** A due job waiting in a slot's line: a concurrency limit's, or its singleton's. */
export interface SlotWait {
  kind: 'concurrency' | 'singleton';
  /** Index of the slot in the job's slots (its singleton first, then its limits), and the key value it waits on. */
  limit: number;
  key: string;
  /** Its place in that key's oldest-first line. */
  ticket?: number;
  /** Its entry's key in that key's ranked line (a type with priorities). */
  rank?: string;
  /** ISO 8601 time it began to wait. */
  since: string;
}

/** A due job waiting for its throttle's turn: it starts at `until`. */
export interface ThrottleWait {
  kind: 'throttle';
  key: string;
  /** ISO 8601 time of its turn. */
  until: string;
  /** The attempt (lease token its claim gives) the turn was taken for. */
  token: number;
  /**
   * Its entry's key in the throttle's line (a type with priorities): it holds no turn yet, and
   * `until` is about when it would come, were every job ahead to take one.
   */
  rank?: string;
  since: string;
}

/** A job whose handler slept (`ctx.sleep`) or waits for a signal (`ctx.waitForSignal`): due at `until`. */
export interface WakeWait {
  /** `invoke`: its children (`ctx.invoke`) are still running; their release makes it due. */
  kind: 'sleep' | 'signal' | 'invoke';
  /** The sleep's or the signal's name; an invoke's (the first, when it waits for several). */
  key: string;
  /** ISO 8601: the end of the sleep, or the wait's timeout. */
  until: string;
  since: string;
  /** `invoke`: how many children it waits for. */
  children?: number;
}

/** What a job waits for before it can start. */
export type WaitingFor = SlotWait | ThrottleWait | WakeWait;

/** Why flow control turned a job away before it ever ran. */
export interface SkipReason {
  /**
   * `singleton`: its singleton (mode `skip`) found a job of its key running or waiting;
   * `rate-limit`: its key's rate limit was spent; `debounce`: a newer job of its key replaced it.
   */
  kind: 'singleton' | 'rate-limit' | 'debounce';
  key: string;
  /** `singleton`: the job that held the key; `debounce`: the job that replaced it. */
  by?: string;
  /** ISO 8601 time it was skipped. */
  at: string;
}

/** The job as the API returns it: no lease internals. */
export interface JobView {
  id: string;
  type: string;
  state: JobState;
  payload: unknown;
  attempts: number;
  maxAttempts: number;
  createdAt: string;
  updatedAt: string;
  runAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  lastError: AttemptError | null;
  errors: AttemptError[];
  progress: JobProgress | null;
  result: unknown;
  /** Manual retries so far (reruns included); `attempts` counts the current series only. */
  retries: number;
  /** Only for a job that was rerun (`POST /jobs/{id}/rerun`): how many times. */
  reruns?: number;
  /** Only when set: the dispatch deadline. */
  dispatchBy?: string;
  /** Only for schedule runs: the schedule that created the run. */
  schedule?: string;
  /** Who enqueued it (the caller's ARN); absent for jobs enqueued before this was recorded. */
  enqueuedBy?: string;
  /** Operator actions (cancel, retry; a rerun is a retry): who did what, when, oldest first; absent when none. */
  controls?: OperatorAction[];
  /** Only for job types with concurrency limits: the job's key value for each limit. */
  concurrencyKeys?: string[];
  /** Only for job types with a singleton: the job's singleton key value. */
  singletonKey?: string;
  /** Only for job types with a throttle: the job's throttle key value. */
  throttleKey?: string;
  /** Only for job types with a `priority` option: the job's priority, 0 to 10 (higher first). */
  priority?: number;
  /** Only for job types with a debounce: the job's debounce key value. */
  debounceKey?: string;
  /** Only for a job a debounce replaced: the run that took its place (the newest, following every replacement). */
  debouncedInto?: string;
  /** Only while a due job waits: for what (a slot, or a throttle's turn, `until` when), on which key, since when. */
  waitingFor?: { kind: WaitingFor['kind'] | 'debounce'; key: string; since: string; until?: string };
  /** Only for a job with `dependsOn`: its parents and each edge's policy. */
  parents?: { id: string; onParentFailure: 'fail' | 'ignore' | 'cancel' }[];
  /** Only while the job waits for its parents: how many have not finished. */
  pendingParents?: number;
  /** Only for a job others depend on: the jobs registered as its children. */
  children?: string[];
  /**
   * Only for a job started by `ctx.invoke`: the jobs that invoked it (among `children`: the edge
   * that resumes the invoking job when this one ends). Their invoked jobs: `GET /jobs/{id}/invoked`.
   */
  invokedBy?: string[];
  /** Only for a `skipped` job: why flow control turned it away. */
  skipReason?: SkipReason;
  /** Only for a workflow that waited: how many times an attempt ended in a sleep or a signal wait. */
  resumes?: number;
  /** Only once an attempt ended: the AWS requests and DynamoDB write units the platform spent on the job. */
  cost?: JobCost;
}

export function toView(job: Job): JobView {
  return {
    id: job.id,
    type: job.type,
    state: job.state,
    payload: job.payload,
    attempts: job.attempts,
    maxAttempts: job.maxAttempts,
    createdAt: job.createdAt,
    updatedAt: job.updatedAt,
    runAt: job.runAt,
    startedAt: job.startedAt ?? null,
    finishedAt: job.finishedAt ?? null,
    lastError: job.lastError ?? null,
    errors: job.errors,
    progress: job.progress ?? null,
    result: job.result ?? null,
    retries: job.retries ?? 0,
    ...(job.reruns !== undefined ? { reruns: job.reruns } : {}),
    ...(job.dispatchBy !== undefined ? { dispatchBy: job.dispatchBy } : {}),
    ...(job.schedule !== undefined ? { schedule: job.schedule } : {}),
    ...(job.enqueuedBy !== undefined ? { enqueuedBy: job.enqueuedBy } : {}),
    ...(job.controls?.length ? { controls: job.controls } : {}),
    ...(job.flowKeys !== undefined ? { concurrencyKeys: job.flowKeys } : {}),
    ...(job.singletonKey !== undefined ? { singletonKey: job.singletonKey } : {}),
    ...(job.throttleKey !== undefined ? { throttleKey: job.throttleKey } : {}),
    ...(job.priority !== undefined ? { priority: job.priority } : {}),
    ...(job.debounceKey !== undefined ? { debounceKey: job.debounceKey } : {}),
    ...(job.waitingFor !== undefined && !isSettled(job.state) && job.state !== 'running'
      ? { waitingFor: waitingView(job.waitingFor) }
      : isPendingDebounceRun(job)
        ? {
            // a debounced run waits for its key's quiet period (or maxWait): until its runAt
            waitingFor: {
              kind: 'debounce' as const,
              key: job.debounceKey ?? '',
              since: job.createdAt,
              until: job.runAt,
            },
          }
        : {}),
    ...(job.pendingParents !== undefined && job.state === 'waiting' ? { pendingParents: job.pendingParents } : {}),
    ...(job.skipReason !== undefined ? { skipReason: job.skipReason } : {}),
    ...(job.resumes !== undefined ? { resumes: job.resumes } : {}),
    ...(job.cost !== undefined ? { cost: job.cost } : {}),
  };
}

/**
 * A debounced run not started yet, in its first attempt: the run of its key's open window, or one
 * a newer job may still replace. Never one that ran (its lease token counts its claims): an
 * operator's retry or rerun (of a held run above all) is queued at attempts 0 again, but it is
 * the same run, not one a newer job replaces.
 */
export function isPendingDebounceRun(job: Job): boolean {
  return (
    job.debounceKey !== undefined &&
    (job.state === 'queued' || job.state === 'scheduled') &&
    job.attempts === 0 &&
    job.leaseToken === 0
  );
}

function waitingView(w: WaitingFor): NonNullable<JobView['waitingFor']> {
  return { kind: w.kind, key: w.key, since: w.since, ...('until' in w ? { until: w.until } : {}) };
}

/** Entries kept in a job's error history; older ones are dropped first. */
export const ERROR_HISTORY_LIMIT = 10;
export const ERROR_MESSAGE_LIMIT = 500;
export const ERROR_STACK_LIMIT = 1000;

function truncate(text: string, limit: number): string {
  if (text.length <= limit) return text;
  return limit <= 0 ? '' : `${text.slice(0, limit - 1)}…`;
}

/** Text for a thrown non-Error value; never throws (circular objects, BigInt, undefined). */
function describeThrown(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Builds a bounded history entry from anything a handler threw. */
export function describeError(error: unknown, attempt: number, at: number, reason: string): AttemptError {
  const err = error instanceof Error ? error : new Error(typeof error === 'string' ? error : describeThrown(error));
  const entry: AttemptError = {
    attempt,
    at: new Date(at).toISOString(),
    reason,
    name: truncate(err.name || 'Error', 100),
    message: truncate(err.message, ERROR_MESSAGE_LIMIT),
  };
  if (err.stack) entry.stack = truncate(err.stack, ERROR_STACK_LIMIT);
  return entry;
}

/** Longest message in an error summary (the status item's `lastError`). */
export const ERROR_SUMMARY_MESSAGE_LIMIT = 200;

/**
 * The short form of an attempt's error kept on the job's status item: no stack, a message of
 * at most {@link ERROR_SUMMARY_MESSAGE_LIMIT} characters, so that item stays small whatever
 * the handler threw. The whole entry is stored on its own (see docs/data-model.md).
 */
export function errorSummary(error: AttemptError, messageLimit = ERROR_SUMMARY_MESSAGE_LIMIT): AttemptError {
  return {
    attempt: error.attempt,
    at: error.at,
    reason: error.reason,
    name: error.name,
    message: truncate(error.message, Math.max(0, Math.min(messageLimit, ERROR_SUMMARY_MESSAGE_LIMIT))),
  };
}

/** Appends an entry and keeps the newest {@link ERROR_HISTORY_LIMIT}. */
export function appendError(history: readonly AttemptError[], entry: AttemptError): AttemptError[] {
  return [...history, entry].slice(-ERROR_HISTORY_LIMIT);
}

/** The SQS message body for a job: ids only; the payload stays in DynamoDB. */
export interface JobMessage {
  v: 1;
  id: string;
  type: string;
  /** A run that must finish before this job may start (a schedule's `queue-one` policy). */
  after?: string;
  /**
   * The job's runAt (ISO 8601), on a message sent ahead of it (a one-time schedule fires about a
   * minute early): the worker hides such a message until then without a write, instead of a
   * claim that the job's runAt would refuse (a refused conditional write is billed too).
   */
  notBefore?: string;
}

/**
 * The message that brings a job to its worker: its id and type, the run it must wait for (a
 * schedule's `queue-one`), and, on a message sent ahead of the job's runAt, that runAt. Every
 * hand-off (the API, the worker, the release, the supervisor, a schedule's fire) builds it here.
 *
 * @example
 * queue.send(route.queueUrl, jobMessage(job));
 * scheduler.scheduleJob({ name, fireAt, queueArn, message: jobMessage(job, { notBefore: runAt }) });
 */
export function jobMessage(
  job: Pick<Job, 'id' | 'type'> & { after?: string | undefined },
  options: { notBefore?: number } = {},
): JobMessage {
  return {
    v: 1,
    id: job.id,
    type: job.type,
    ...(job.after !== undefined ? { after: job.after } : {}),
    ...(options.notBefore !== undefined ? { notBefore: new Date(options.notBefore).toISOString() } : {}),
  };
}

/** Canonical JSON: object keys sorted, so equal values give equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
