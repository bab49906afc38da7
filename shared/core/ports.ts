import type { AttemptError, Job, JobMessage, JobProgress, SkipReason, WaitingFor, WakeWait } from './job';
import type { JobCost } from './metrics';
import { fnv1a } from './table';

/** Outcome of trying to start an attempt. */
export type ClaimResult =
  /** We hold the lease: run the handler. */
  | { kind: 'claimed'; job: Job }
  /** Another worker holds a live lease: this delivery is a duplicate. */
  | { kind: 'busy'; job: Job }
  /** Succeeded, failed or cancelled already: nothing to do. */
  | { kind: 'finished'; job: Job }
  /** The last allowed attempt's lease expired without a result. */
  | { kind: 'exhausted'; job: Job }
  /** It waits for its parents (`dependsOn`): their release sends it a message of its own. */
  | { kind: 'blocked'; job: Job }
  /** No such job (e.g. deleted by TTL): nothing to do. */
  | { kind: 'missing' }
  /** The job (any claimable state) is not due yet: its runAt is still ahead. Start it later. */
  | { kind: 'early'; job: Job }
  /**
   * Claimable, but an earlier attempt's lease (cancelled, then retried) may still be running:
   * start it once `leaseExpiresAt` plus the clock-skew margin has passed.
   */
  | { kind: 'fenced'; job: Job }
  /** Never started and its `dispatchBy` passed: record `expired` instead of running it. */
  | { kind: 'past-deadline'; job: Job };

/** Why a claim started no attempt: every {@link ClaimResult} but `claimed`. */
export type RefusedClaim = Exclude<ClaimResult, { kind: 'claimed' }>;

/** What {@link JobStore.claim} is asked. */
export interface ClaimInput {
  id: string;
  /** The type the delivery names: a job of another type is not claimed. */
  type: string;
  /** Unique per claim call: a replay of our own applied claim is told by it. */
  owner: string;
  now: number;
  leaseMs: number;
  /** The job type's timeout: tells the due index when a running attempt is overdue. */
  attemptTimeoutMs?: number;
  /** The SQS message carrying this delivery, kept on the lease. */
  messageId?: string;
}

/** What {@link JobStore.heartbeat} writes: the lease, until `now + leaseMs`. */
export interface HeartbeatInput {
  job: Job;
  now: number;
  leaseMs: number;
}

/** What {@link JobStore.progress} writes. */
export interface ProgressInput {
  job: Job;
  progress: JobProgress;
}

/** What {@link JobStore.succeed} writes. */
export interface SucceedInput {
  job: Job;
  now: number;
  result: unknown;
  expiresAt: number;
  writer: string;
  cost?: JobCost;
}

/** What {@link JobStore.retry} writes. */
export interface RetryInput {
  job: Job;
  now: number;
  runAt: number;
  errors: AttemptError[];
  expiresAt: number;
  writer: string;
  /**
   * The attempt never ran (given back before its handler, for lack of a slot or a throttle
   * turn): `attempts` goes back by one, so giving back cannot spend the job's last attempt.
   * @default false
   */
  refund?: boolean;
  cost?: JobCost;
}

/** What {@link JobStore.fail} writes. */
export interface FailInput {
  job: Job;
  now: number;
  errors: AttemptError[];
  expiresAt: number;
  writer: string;
  cost?: JobCost;
  /**
   * End the job `held` instead of `failed`: its replay diverged from its journal
   * (`NondeterminismError`), and it waits for an operator's retry, rerun or cancel. The same one
   * write as a fail, at the same cost, with the same `finishedAt` and error (the worker gives a
   * held job its journal's retention as `expiresAt`, so it outlives a finished job); the job
   * enters the state index under `held`.
   * @default false
   * @example
   * await store.fail({ job, now, errors, expiresAt, writer, hold: true });
   */
  hold?: boolean;
}

/** What {@link JobStore.expire} writes. */
export interface ExpireInput {
  job: Job;
  now: number;
  expiresAt: number;
}

/** What {@link JobStore.markWaiting} writes. */
export interface MarkWaitingInput {
  job: Job;
  waitingFor: WaitingFor;
  /** With it, a `running` job whose lease may no longer be held counts as waiting too. */
  now?: number;
}

/** What {@link JobStore.wake} writes. */
export interface WakeInput {
  id: string;
  signal: string;
  now: number;
}

/** What {@link JobStore.skip} writes. */
export interface SkipInput {
  job: Job;
  now: number;
  expiresAt: number;
  reason: SkipReason;
  /** Only a job of a lower debounce seq (or one without a seq) is skipped. */
  beforeSeq?: number;
}

/** What {@link JobStore.suspend} writes. */
export interface SuspendInput {
  job: Job;
  now: number;
  /** When the wait ends: the sleep's end, or the signal wait's timeout (epoch ms). */
  runAt: number;
  waitingFor: WakeWait;
  writer: string;
  cost?: JobCost;
  /**
   * An invoke's wait (`ctx.invoke`): the children it waits for. The job waits as one with parents
   * does (`pendingParents` set, the edges counted so far, `rel`, cleared): their release makes it
   * due, and no message or schedule brings it back. @default none (a sleep or a signal wait)
   */
  pendingParents?: number;
}

/**
 * What an attempt-ending write can tell about the job as it left it, at no extra cost: the
 * children registered with it (`dependsOn` naming it), so that a job without any needs no read
 * to know it has none to release.
 */
export interface EndWritten {
  childCount: number;
}

/** Persistence of jobs and their leases. Every write after a claim is fenced by `token`. */
export interface JobStore {
  /**
   * Writes a new job unless its id is taken; returns the existing job otherwise. One conditional
   * write. An id whose job is past its retention (`expiresAt` before `job.createdAt`: gone for
   * readers, not yet deleted by TTL) is free: the new job replaces it.
   */
  create(job: Job): Promise<{ created: true } | { created: false; existing: Job }>;
  /** The stored job, including one past its retention that TTL has not deleted yet. */
  get(id: string): Promise<Job | undefined>;
  /**
   * Starts an attempt: state → running, attempts + 1, token + 1, lease until `now + leaseMs`.
   * Refuses a job whose runAt is still ahead (`early`), a job whose previous lease may still be
   * held (`busy` when running, `fenced` otherwise; a lease counts until it expired more than
   * `MAX_CLOCK_SKEW_MS` ago) and a never-started job past its `dispatchBy` (`past-deadline`). `attemptTimeoutMs` (the job type's timeout) tells the due
   * index when a running attempt is overdue.
   */
  claim(input: ClaimInput): Promise<ClaimResult>;
  /** Extends the lease; throws LeaseLostError when the token is no longer ours. */
  heartbeat(input: HeartbeatInput): Promise<void>;
  /** Records progress of the running attempt; throws LeaseLostError when the token is no longer ours. */
  progress(input: ProgressInput): Promise<void>;
  /**
   * The writes that end an attempt (`succeed`, `retry`, `fail`) are fenced by `job.leaseToken`
   * and the `running` state, and record `writer` (unique per claim call: the owner the caller
   * claimed with, or tried to). When the condition fails, the write counts as already applied
   * only if the stored job is in the target state under the same token AND was written by the
   * same `writer` (our own write, retried after its response was lost); otherwise it throws
   * LeaseLostError.
   *
   * `retry` and `fail` record the attempt's error, the last entry of `errors` (the entries
   * before it are the history the store gave with the job): the job's `lastError`, and its
   * history as `get` and `claim` give it (the last `ERROR_HISTORY_LIMIT`). The stored
   * error is retained until `expiresAt`. An empty `errors` records none.
   *
   * With `cost` (what this delivery spent on the job before the write), the write sets the job's
   * `cost` to the claimed job's plus `cost` plus the store's own requests and write units for this
   * call (the write, and the error item a retry or fail writes after it), estimated from the
   * items' sizes as DynamoDB bills them. Without it, the job's cost is left as it is.
   *
   * `succeed` returns the job's children count as the write left it ({@link EndWritten}), or
   * nothing (a store that cannot say: the release then reads the job).
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: a store may say nothing (the release then reads the job)
  succeed(input: SucceedInput): Promise<void | EndWritten>;
  retry(input: RetryInput): Promise<void>;
  /**
   * Closes the attempt fenced by `job.leaseToken`: ours, or an expired one `claim` reported as
   * `exhausted`. The job ends `failed`, or `held` with `hold` (the replay-safe check then looks
   * for `held`).
   */
  fail(input: FailInput): Promise<void>;
  /**
   * Ends a job that never started and whose `dispatchBy` passed: state → `expired`, no attempt.
   * Returns false when the job changed first (started, cancelled, expired already).
   */
  expire?(input: ExpireInput): Promise<boolean>;
  /**
   * Records why a due job has not started (it waits for a concurrency slot or a throttle turn);
   * the claim that starts it clears it. Changes nothing else (not `updatedAt`). With `now`, a
   * `running` job whose lease may no longer be held at `now` (one a takeover will start) counts
   * as waiting too. Returns false when the job is not waiting to start (running under a lease
   * that may be held, finished, missing).
   */
  markWaiting?(input: MarkWaitingInput): Promise<boolean>;
  /**
   * Ends a job that never started, because flow control turned it away: state → `skipped` with
   * `reason`, no attempt. Only from `scheduled`/`queued`, with no attempt in its series, under
   * `job.leaseToken`. Returns false when the job changed first (started, cancelled, finished).
   * One write; a skipped job is listed from `byType` (no sparse index entry: skips may be common).
   */
  skip?(input: SkipInput): Promise<boolean>;
  /**
   * Ends the running attempt to wait (`ctx.sleep`, `ctx.waitForSignal`): state → `waiting`, due at
   * `runAt`, the attempt given back (`attempts` - 1: waiting spends none), `resumes` + 1, the
   * lease removed, `waitingFor` recorded and, for a signal, `waitSignal` = its name. Fenced and
   * replay-safe as `retry` is. One write.
   */
  suspend(input: SuspendInput): Promise<void>;
  /**
   * Makes a job that waits for `signal` due now (`runAt` = now, `waitSignal` removed). Returns
   * the job as written, or undefined when it does not wait for that signal (running, finished,
   * waiting for something else, missing). One conditional write.
   */
  wake(input: WakeInput): Promise<Job | undefined>;
}

/** One message of a {@link JobQueue.sendBatch}. */
export interface QueueEntry {
  message: JobMessage;
  delaySeconds?: number;
  /** The message's `MessageGroupId` (`messageGroupOf`): its tenant, for SQS fair queues. @default none */
  groupId?: string;
}

/** What became of one entry of a {@link JobQueue.sendBatch}, in the order of the entries. */
export type QueueEntryOutcome = { sent: true } | { sent: false; error: Error };

/** SendMessageBatch limits: at most 10 entries and 1 MiB of message bodies per call. */
export const SEND_BATCH_MAX_ENTRIES = 10;
export const SEND_BATCH_MAX_BYTES = 1024 * 1024;

/**
 * Splits message bodies, in order, into groups a SendMessageBatch takes: at most
 * {@link SEND_BATCH_MAX_ENTRIES} entries and {@link SEND_BATCH_MAX_BYTES} bytes each.
 * Returns the indexes of each group.
 */
export function sendBatchGroups(bodies: readonly string[]): number[][] {
  const groups: number[][] = [];
  let bytes = Number.POSITIVE_INFINITY;
  let count = Number.POSITIVE_INFINITY;
  bodies.forEach((body, i) => {
    const size = Buffer.byteLength(body, 'utf8');
    if (count >= SEND_BATCH_MAX_ENTRIES || bytes + size > SEND_BATCH_MAX_BYTES) {
      groups.push([]);
      bytes = 0;
      count = 0;
    }
    groups.at(-1)?.push(i);
    bytes += size;
    count += 1;
  });
  return groups;
}

/** Sends job messages to a ready queue and adjusts the visibility of received ones. */
export interface JobQueue {
  /**
   * Sends one message, delayed by `delaySeconds` (none: at once), in the group `groupId` (its
   * `MessageGroupId`: the job's tenant, for SQS fair queues; none: no group).
   */
  send(queueUrl: string, message: JobMessage, delaySeconds?: number, groupId?: string): Promise<void>;
  /**
   * Sends many messages to one queue in as few calls as SQS allows (SendMessageBatch: groups
   * from {@link sendBatchGroups}). Never throws for a failed entry: each entry's outcome is
   * reported, in order, so nothing fails silently.
   */
  sendBatch(queueUrl: string, entries: readonly QueueEntry[]): Promise<QueueEntryOutcome[]>;
  changeVisibility(queueUrl: string, receiptHandle: string, seconds: number): Promise<void>;
}

/** One-time schedules that hand a job to its ready queue later. */
export interface JobScheduler {
  /**
   * Creates the schedule `name` (the job id for a delayed job, {@link retryScheduleName} for a
   * long retry delay); an existing schedule of the same name counts as success.
   */
  scheduleJob(input: { name: string; fireAt: number; queueArn: string; message: JobMessage }): Promise<void>;
  /** Deletes it; returns false when it did not exist. */
  deleteJobSchedule(name: string): Promise<boolean>;
}

/**
 * Schedule name for the retry after `attempt` of job `id`: stable, ≤ 64 chars, Scheduler-safe.
 * It starts with `_`, which no job id can, so it never collides with a delayed job's schedule.
 */
export function retryScheduleName(id: string, attempt: number): string {
  return prefixedScheduleName(`_r${attempt}.`, id);
}

/**
 * Schedule name for the wake of job `id` after its `resumes`-th wait (`ctx.sleep`,
 * `ctx.waitForSignal`) longer than a message can be hidden. Starts with `_`, as a retry's.
 */
export function wakeScheduleName(id: string, resumes: number): string {
  return prefixedScheduleName(`_w${resumes}.`, id);
}

function prefixedScheduleName(prefix: string, id: string): string {
  if (prefix.length + id.length <= 64) return `${prefix}${id}`;
  return `${prefix}${id.slice(0, 64 - prefix.length - 9)}.${fnv1a(id).toString(16).padStart(8, '0')}`;
}
