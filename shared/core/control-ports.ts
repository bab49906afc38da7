import type { Job } from './job';
import type { JobState } from './states';

/**
 * Ports of the control plane (listing, cancel, retry, DLQ). They sit beside the data-plane
 * ports of `ports.ts`; the adapters are `shared/aws/dynamo-job-index.ts`,
 * `shared/aws/dynamo-job-control.ts`, `shared/aws/sqs-dead-letters.ts` and
 * `shared/aws/dynamo-redrive-log.ts`.
 */

/** A job as the GSIs project it (INCLUDE projection: see `JOB_TABLE`). */
export interface JobSummary {
  id: string;
  type: string;
  state: JobState;
  createdAt: string;
  runAt: string;
  attempts: number;
  finishedAt: string | null;
}

/** One GSI entry: its sort key (`<createdAt>#<id>`, unique per job) and the summary. */
export interface IndexEntry {
  sortKey: string;
  summary: JobSummary;
  /** The job's payload: only when the query asked for it (`withPayload`). */
  payload?: unknown;
}

/** One partition of a GSI: a `(type, shard)` of `byType` or a `(type, state, shard)` of `byTypeState`. */
export interface IndexPartition {
  index: 'byType' | 'byTypeState';
  key: string;
}

export interface IndexQuery {
  partition: IndexPartition;
  /** Only sort keys strictly below this one. */
  below?: string;
  /** Only sort keys at or above this one. */
  atLeast?: string;
  /** At most this many entries (1–100). */
  limit: number;
  /**
   * Also return each entry's payload (for a payload filter). An inline payload comes in the
   * read of the summaries at no extra cost; a payload with an item of its own takes one more
   * read of that item.
   * @default false
   */
  withPayload?: boolean;
}

export interface IndexPage {
  /** Newest first (sort key descending). Never empty when `more` is true. */
  entries: IndexEntry[];
  /** The partition may hold further entries below the last one returned. */
  more: boolean;
}

/** Reads the job GSIs, one partition at a time, newest first. Never scans the table. */
export interface JobIndex {
  query(query: IndexQuery): Promise<IndexPage>;
}

/**
 * Outcome of a control write: applied, refused because of the job's state (or type, or its
 * retention having passed), or no such job. `previous` is the job just before an applied write;
 * it is absent when the write was found applied already (a replay whose first response was lost).
 */
export type ControlResult =
  | { kind: 'applied'; job: Job; previous?: Job }
  | { kind: 'refused'; job: Job }
  | { kind: 'missing' };

/** What {@link JobControl.cancel} takes. */
export interface CancelInput {
  id: string;
  type?: string;
  /**
   * The job types it may cancel (a caller's grant scoped by type): a job of another type is
   * refused by the write itself, so a check that read the type before cannot be outrun.
   * @default every type
   */
  types?: readonly string[];
  from: readonly JobState[];
  now: number;
  expiresAt: number;
  /** Who cancels (the caller's ARN): appended to the job's `controls` by the same write. @default not recorded */
  by?: string;
}

/** What {@link JobControl.restart} takes. */
export interface RestartInput {
  id: string;
  type?: string;
  types?: readonly string[];
  from: readonly JobState[];
  now: number;
  /** Who retries (the caller's ARN): appended to the job's `controls` by the same write. @default not recorded */
  by?: string;
  /** A rerun (`POST /jobs/{id}/rerun`): the new journal series and payload it starts the job with. @default a plain retry */
  rerun?: RerunChange;
}

/**
 * What a rerun changes beside a retry's restart, in the same write: the journal's series (its
 * new entries are written before), `reruns` + 1, and the payload when a corrected one is given.
 * The write is refused unless the job is still the one the rerun read: the same incarnation
 * (`createdAt`) and the same journal series (`seen.journal`), so a rerun never starts a journal
 * cut from another run's.
 */
export interface RerunChange {
  /** The job as the rerun read it (its incarnation, series, and the status item the payload must fit in). */
  seen: Job;
  /** The journal series the job runs on from now on. */
  journal: string;
  /**
   * The corrected payload, already validated, and its hash (`payloadHash` of its type and value).
   * The adapter keeps it in the status item when it fits there (as an enqueue does), else writes it
   * as the job's payload item first. @default the payload stays
   */
  payload?: { value: unknown; hash: string };
}

/**
 * Operator writes on a job, each one conditional `UpdateItem` with no read before it: the
 * condition checks the state, the type and the retention (a job whose `expiresAt` is before
 * `now` is refused, as it is gone for callers), and the item as it was comes back with the
 * outcome. `cancel` and `restart` are idempotent for a replay of the same call (same `now`): a
 * replay refused because the first try was applied (its response lost) reports `applied`.
 */
export interface JobControl {
  /**
   * State → `cancelled` when the job is in one of `from` (of `type` and one of `types`, if given) and not past
   * its retention; sets `finishedAt`, `expiresAt` and the state index key, and drops the lease
   * owner (the token stays, so a running attempt's fenced writes fail). `leaseExpiresAt` stays:
   * no later attempt may start before the cancelled one's lease has run out.
   */
  cancel(input: CancelInput): Promise<ControlResult>;
  /**
   * Starts a new attempt series when the job is in one of `from`, of `type` (if given) and of
   * one of `types` (if given: the deployed types), and not past its retention: state →
   * `queued`, `attempts` → 0, `retries` + 1, `runAt` → now; removes `expiresAt`, `finishedAt`,
   * `startedAt`, result, progress and `dispatchBy`; keeps the error history, the fencing token
   * (the next claim still increments it) and `leaseExpiresAt` (the claim waits until a
   * cancelled attempt's lease has run out).
   */
  restart(input: RestartInput): Promise<ControlResult>;
  /**
   * Undoes a {@link restart} whose message could not be sent: puts back `previous`'s state,
   * times and TTL, only if the job is still the restarted one (queued, no attempt started).
   * Returns false when the job moved on.
   */
  undoRestart(input: { previous: Job; retries: number }): Promise<boolean>;
}

/** A message seen in a dead-letter queue (not consumed). */
export interface DeadLetter {
  messageId: string;
  /** The job id when the body is a job message, else null. */
  jobId: string | null;
  /** ApproximateReceiveCount (it counts receives in the ready queue and the DLQ). */
  receiveCount: number;
  /** When the message was first sent (ISO 8601), if SQS said. */
  sentAt: string | null;
  /** First 256 characters of the body when it is not a job message, else null. */
  body: string | null;
}

/** A received message, held invisible until deleted or its visibility ends. */
export interface ReceivedLetter {
  messageId: string;
  receiptHandle: string;
  body: string;
}

/** What StartMessageMoveTask answered. */
export type MoveTaskStart =
  | { kind: 'started'; taskHandle: string }
  | { kind: 'running'; taskHandle: string | null; moved: number | null; toMove: number | null }
  /** The SQS endpoint does not implement message move tasks (e.g. an emulator). */
  | { kind: 'unsupported' };

/** The dead-letter queues' operations the API needs. */
export interface DeadLetterQueues {
  /** Looks at up to `max` (≤ 10) messages without consuming them (visibility 0). */
  peek(dlqUrl: string, max: number): Promise<DeadLetter[]>;
  /** ApproximateNumberOfMessages (+ not visible) of a queue. */
  depth(queueUrl: string): Promise<{ visible: number; inFlight: number }>;
  /** Starts an SQS message move task from the DLQ to `destinationArn`. */
  startMove(input: { dlqArn: string; destinationArn: string }): Promise<MoveTaskStart>;
  /** Receives up to `max` (≤ 10) messages, hiding them for `visibilitySeconds`. */
  receive(queueUrl: string, max: number, visibilitySeconds: number): Promise<ReceivedLetter[]>;
  /** Sends bodies as new messages; returns the indexes that were sent. */
  sendAll(queueUrl: string, bodies: string[]): Promise<Set<number>>;
  /** Deletes received messages; returns how many were deleted. */
  deleteAll(queueUrl: string, receiptHandles: string[]): Promise<number>;
}

/** How a redrive moved a DLQ's messages back (see `shared/api/dlq-service.ts`). */
export type RedriveMethod = 'move-task' | 'receive-send';

/** A DLQ redrive an operator made, as the dashboard shows it ("last redriven by ... at ..."). */
export interface RedriveRecord {
  /** The job type whose DLQ was redriven. */
  type: string;
  /** The caller's ARN as it signed (an assumed role's carries its session), or `anonymous`. */
  by: string;
  /** When the redrive was made (ISO 8601, `Date.prototype.toISOString()`). */
  at: string;
  method: RedriveMethod;
  /**
   * Messages moved back, when known: a `receive-send` redrive counts them; a move task moves
   * them later, in SQS.
   * @default unknown
   */
  moved?: number;
}

/**
 * The last redrive of each job type's DLQ: one small record per type, replaced by each redrive.
 * The full history is the API's `operator action` log lines.
 */
export interface RedriveLog {
  /**
   * Stores `record` as its type's last redrive, unless the one stored is later (`at`), so a
   * slow write never hides a newer redrive. Returns false when it was kept out that way.
   */
  record(record: RedriveRecord): Promise<boolean>;
  /** The type's last redrive, or undefined when it was never redriven. */
  last(type: string): Promise<RedriveRecord | undefined>;
}
