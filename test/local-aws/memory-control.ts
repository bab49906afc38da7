/**
 * In-memory stand-ins for the control-plane ports (`shared/core/control-ports.ts`), for the unit
 * tests and the in-memory mode. `FakeJobControl` works on a `FakeJobStore`'s jobs with the
 * DynamoDB adapter's conditions; `FakeDeadLetterQueues` keeps queues as arrays of messages;
 * `FakeRedriveLog` keeps each type's last redrive.
 */

import { cancelledJob, pastRetention, restartedJob } from '../../shared/core/control';
import type {
  CancelInput,
  ControlResult,
  DeadLetter,
  DeadLetterQueues,
  IndexEntry,
  IndexPage,
  IndexQuery,
  JobControl,
  JobIndex,
  MoveTaskStart,
  ReceivedLetter,
  RedriveLog,
  RedriveRecord,
  RestartInput,
} from '../../shared/core/control-ports';
import { jobDueAttributes } from '../../shared/core/due';
import type { Job } from '../../shared/core/job';
import type { JobState } from '../../shared/core/states';
import { isSparseState, keys } from '../../shared/core/table';
import type { DueAttributes, FakeJobStore } from './memory-fakes';

const iso = (ms: number) => new Date(ms).toISOString();

export class FakeJobControl implements JobControl {
  constructor(private readonly store: FakeJobStore) {}

  /**
   * One conditional update, with the adapter's condition: the job is in one of `from`, of
   * `type` / one of `types` when given, and not past its retention. `change` edits the job
   * and returns its new due attributes.
   */
  private apply(
    input: {
      id: string;
      type?: string;
      types?: readonly string[];
      from: readonly JobState[];
      now?: number;
      rerun?: RestartInput['rerun'];
    },
    change: (job: Job) => DueAttributes,
    replay?: { state: JobState; updatedAt: string; journal?: string },
  ): ControlResult {
    const job = this.store.peek(input.id);
    if (!job) return { kind: 'missing' };
    const seen = input.rerun?.seen;
    const allowed =
      // a rerun: still the incarnation and the journal series it read
      (seen === undefined || (job.createdAt === seen.createdAt && job.journal === seen.journal)) &&
      (input.type === undefined || job.type === input.type) &&
      (input.types === undefined || input.types.includes(job.type)) &&
      input.from.includes(job.state) &&
      (input.now === undefined || !pastRetention(job, input.now));
    if (!allowed) {
      // The adapter's replay rule: the stored job is exactly what this write left behind.
      const ours =
        replay !== undefined &&
        job.state === replay.state &&
        job.updatedAt === replay.updatedAt &&
        (replay.journal === undefined || job.journal === replay.journal);
      return { kind: ours ? 'applied' : 'refused', job };
    }
    const next = this.store.peek(input.id) as Job;
    const due = change(next);
    this.store.seed(next, due);
    return { kind: 'applied', job: this.store.peek(input.id) as Job, previous: job };
  }

  /** Keeps the token and `leaseExpiresAt`, so no new attempt starts while the cancelled one may run. */
  async cancel(input: CancelInput) {
    return this.apply(
      input,
      (job) => {
        Object.assign(job, cancelledJob(job, input));
        delete job.leaseOwner;
        return this.store.due(job.id) ?? {};
      },
      { state: 'cancelled', updatedAt: iso(input.now) },
    );
  }

  /**
   * Keeps the token and `leaseExpiresAt` (the claim's fence), the errors and the last writer. A
   * rerun also needs the incarnation and journal series it read, as the adapter's condition does.
   */
  async restart(input: RestartInput) {
    return this.apply(
      input,
      (job) => {
        const next = restartedJob(job, input);
        for (const field of Object.keys(job) as (keyof Job)[]) delete job[field];
        Object.assign(job, next);
        return jobDueAttributes({ id: job.id, state: 'queued', runAt: job.runAt });
      },
      { state: 'queued', updatedAt: iso(input.now), ...(input.rerun ? { journal: input.rerun.journal } : {}) },
    );
  }

  /** Puts back `previous`'s state, attempts, times and TTL; everything else stays as it is now. */
  async undoRestart({ previous, retries }: { previous: Job; retries: number }): Promise<boolean> {
    const current = this.store.peek(previous.id);
    if (current?.attempts !== 0 || current.retries !== retries) return false;
    const result = this.apply({ id: previous.id, type: previous.type, from: ['queued'] }, (job) => {
      job.state = previous.state;
      job.attempts = previous.attempts;
      job.runAt = previous.runAt;
      job.updatedAt = previous.updatedAt;
      job.retries = retries - 1;
      for (const field of ['finishedAt', 'startedAt', 'expiresAt', 'dispatchBy'] as const) {
        if (previous[field] !== undefined) Object.assign(job, { [field]: previous[field] });
      }
      return this.store.due(job.id) ?? {};
    });
    return result.kind === 'applied';
  }
}

interface Stored {
  messageId: string;
  body: string;
  receiveCount: number;
  invisibleUntil: number;
  receipt?: string;
}

/** Queues by URL; `failSend` makes sends of bodies matching it fail (per entry). */
export class FakeDeadLetterQueues implements DeadLetterQueues {
  readonly queues = new Map<string, Stored[]>();
  moveTask: MoveTaskStart = { kind: 'unsupported' };
  failSend: (body: string) => boolean = () => false;
  private counter = 0;

  put(queueUrl: string, body: string): void {
    const queue = this.queues.get(queueUrl) ?? [];
    queue.push({ messageId: `m-${++this.counter}`, body, receiveCount: 0, invisibleUntil: 0 });
    this.queues.set(queueUrl, queue);
  }

  bodies(queueUrl: string): string[] {
    return (this.queues.get(queueUrl) ?? []).map((m) => m.body);
  }

  private visible(queueUrl: string): Stored[] {
    return (this.queues.get(queueUrl) ?? []).filter((m) => m.invisibleUntil <= Date.now());
  }

  async peek(dlqUrl: string, max: number): Promise<DeadLetter[]> {
    return this.visible(dlqUrl)
      .slice(0, max)
      .map((m) => {
        m.receiveCount += 1;
        return { messageId: m.messageId, jobId: null, receiveCount: m.receiveCount, sentAt: null, body: m.body };
      });
  }

  async depth(queueUrl: string) {
    const all = this.queues.get(queueUrl) ?? [];
    const visible = this.visible(queueUrl).length;
    return { visible, inFlight: all.length - visible };
  }

  async startMove(): Promise<MoveTaskStart> {
    return this.moveTask;
  }

  async receive(queueUrl: string, max: number, visibilitySeconds: number): Promise<ReceivedLetter[]> {
    return this.visible(queueUrl)
      .slice(0, max)
      .map((m) => {
        m.receiveCount += 1;
        m.invisibleUntil = Date.now() + visibilitySeconds * 1000;
        m.receipt = `r-${m.messageId}-${m.receiveCount}`;
        return { messageId: m.messageId, receiptHandle: m.receipt, body: m.body };
      });
  }

  async sendAll(queueUrl: string, bodies: string[]): Promise<Set<number>> {
    const sent = new Set<number>();
    bodies.forEach((body, i) => {
      if (this.failSend(body)) return;
      this.put(queueUrl, body);
      sent.add(i);
    });
    return sent;
  }

  async deleteAll(queueUrl: string, receiptHandles: string[]): Promise<number> {
    const queue = this.queues.get(queueUrl) ?? [];
    const keep = queue.filter((m) => !m.receipt || !receiptHandles.includes(m.receipt));
    this.queues.set(queueUrl, keep);
    return queue.length - keep.length;
  }
}

/**
 * Each type's last redrive, with the adapter's condition: a record older (`at`) than the one
 * stored is kept out. `failRecord` makes `record` throw it (a DynamoDB that does not answer).
 */
export class FakeRedriveLog implements RedriveLog {
  private readonly records = new Map<string, RedriveRecord>();
  failRecord: Error | undefined;

  async record(record: RedriveRecord): Promise<boolean> {
    if (this.failRecord) throw this.failRecord;
    const stored = this.records.get(record.type);
    if (stored && stored.at > record.at) return false;
    this.records.set(record.type, { ...record });
    return true;
  }

  async last(type: string): Promise<RedriveRecord | undefined> {
    const stored = this.records.get(type);
    return stored ? { ...stored } : undefined;
  }
}

/**
 * The GSIs over a {@link FakeJobStore}'s jobs, with the adapter's Query semantics: one partition
 * per call (`byType`, or the sparse `byTypeState` of a failed, cancelled or expired job), sort
 * key descending, `below` exclusive, `atLeast` inclusive, `limit`; the payload only when asked.
 */
export class FakeJobIndex implements JobIndex {
  readonly queries: IndexQuery[] = [];

  constructor(private readonly store: FakeJobStore) {}

  async query(query: IndexQuery): Promise<IndexPage> {
    this.queries.push(query);
    const entries: IndexEntry[] = this.store
      .all()
      .filter((job) =>
        query.partition.index === 'byType'
          ? keys.byType(job.type, job.id) === query.partition.key
          : isSparseState(job.state) && keys.byTypeState(job.type, job.state, job.id) === query.partition.key,
      )
      .map((job) => ({
        sortKey: keys.created(job.createdAt, job.id),
        summary: {
          id: job.id,
          type: job.type,
          state: job.state,
          createdAt: job.createdAt,
          runAt: job.runAt,
          attempts: job.attempts,
          finishedAt: job.finishedAt ?? null,
        },
        ...(query.withPayload ? { payload: job.payload } : {}),
      }))
      .filter(
        (e) =>
          (query.below === undefined || e.sortKey < query.below) &&
          (query.atLeast === undefined || e.sortKey >= query.atLeast),
      )
      .sort((a, b) => (a.sortKey < b.sortKey ? 1 : -1));
    return { entries: entries.slice(0, query.limit), more: entries.length > query.limit };
  }
}
