/**
 * An in-memory {@link DueIndex} over the fakes' items: the due attributes of `FakeJobStore`'s
 * jobs and of `FakeJournal`'s inbox signals (the `byDue` entries the adapters write), the
 * `byType` entries of the jobs (the creation sweep), and the checkpoints. Held to the same
 * contract as `DynamoDueIndex` (test/contract/due-index.contract.ts). Reads are as strongly
 * consistent as the fakes: there is no index lag.
 */
import { dueBucket } from '../../shared/core/due';
import type { Checkpoint, CheckpointName, DueEntry, DueIndex, DueKey } from '../../shared/core/due-index';
import type { Job } from '../../shared/core/job';
import { isSettled } from '../../shared/core/states';
import { keys } from '../../shared/core/table';
import type { FakeJobStore } from './memory-fakes';
import type { FakeJournal } from './memory-journal';

const JOB_PREFIX = 'job#';

export class FakeDueIndex implements DueIndex {
  private readonly checkpoints = new Map<CheckpointName, { minute: number; retry: Set<number> }>();
  /** `repairs` of each item, by its key. */
  private readonly repairs = new Map<string, number>();

  constructor(
    private readonly store: FakeJobStore,
    private readonly journal?: FakeJournal,
  ) {}

  async query(bucket: string, upTo: number): Promise<DueEntry[]> {
    const jobs = this.store.all().flatMap((job) => {
      const due = this.store.due(job.id);
      return due?.dueBucket === bucket && due.dueAt !== undefined && due.dueAt <= upTo
        ? [{ pk: keys.job(job.id), dueAt: due.dueAt }]
        : [];
    });
    const inbox = (this.journal?.dueEntries() ?? []).flatMap((entry) =>
      entry.dueBucket === bucket && entry.dueAt <= upTo ? [{ pk: entry.pk, sk: entry.sk, dueAt: entry.dueAt }] : [],
    );
    return [...jobs, ...inbox].sort((a, b) => a.dueAt - b.dueAt);
  }

  async created(partition: string, fromMs: number, toMs: number): Promise<{ id: string; createdAt: number }[]> {
    return this.store.all().flatMap((job) => {
      const createdAt = Date.parse(job.createdAt);
      return keys.byType(job.type, job.id) === partition && createdAt >= fromMs && createdAt < toMs
        ? [{ id: job.id, createdAt }]
        : [];
    });
  }

  async unfinished(ids: readonly string[]): Promise<string[]> {
    return ids.filter((id) => {
      const job = this.store.peek(id);
      // held, as finished: nothing but an operator moves it (the adapter's sweep skips it too)
      return job !== undefined && !isSettled(job.state) && this.store.due(id)?.dueAt === undefined;
    });
  }

  async getCheckpoint(name: CheckpointName = 'due'): Promise<Checkpoint | undefined> {
    const saved = this.checkpoints.get(name);
    return saved ? { minute: saved.minute, retry: [...saved.retry].sort((a, b) => a - b) } : undefined;
  }

  async setCheckpoint(
    { minute, done, failed }: { minute: number; done: readonly number[]; failed: readonly number[] },
    name: CheckpointName = 'due',
  ): Promise<void> {
    const retry = this.checkpoints.get(name)?.retry ?? new Set<number>();
    for (const m of failed) retry.add(m);
    for (const m of done) retry.delete(m);
    this.checkpoints.set(name, { minute, retry });
  }

  async loadJob(id: string): Promise<{ job: Job; dueAt?: number; repairs: number } | undefined> {
    const job = this.store.peek(id);
    if (!job) return undefined;
    const dueAt = this.store.due(id)?.dueAt;
    return { job, ...(dueAt !== undefined ? { dueAt } : {}), repairs: this.repairs.get(keys.job(id)) ?? 0 };
  }

  async moveDue(key: DueKey, from: number | undefined, to: number, options: { repair?: boolean } = {}) {
    const { pk, sk } = typeof key === 'string' ? { pk: key, sk: undefined } : key;
    const id = pk.slice(JOB_PREFIX.length);
    const job = pk === keys.job(id) && sk === undefined ? this.store.peek(id) : undefined;
    let moved = false;
    if (job) {
      const current = this.store.due(id)?.dueAt;
      if (current !== from) return false;
      this.store.seed(job, { dueBucket: dueBucket(to, id), dueAt: to });
      moved = true;
    } else if (this.journal && sk !== undefined) {
      moved = this.journal.moveDue({ pk, sk }, from, to);
    }
    const at = sk === undefined ? pk : `${pk}/${sk}`;
    if (moved && options.repair) this.repairs.set(at, (this.repairs.get(at) ?? 0) + 1);
    return moved;
  }
}
