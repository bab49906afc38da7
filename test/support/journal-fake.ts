/** An in-memory {@link Journal}, held to the same contract as DynamoJournal (test/contract/journal.contract.ts). */

import { dueBucket } from '../../shared/core/due';
import type {
  InboxDelivery,
  InboxSignal,
  Journal,
  JournalEntry,
  JournalKind,
  JournalRecord,
} from '../../shared/core/journal';
import { inboxOf, journalKey } from '../../shared/core/journal';

const copy = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

export class FakeJournal implements Journal {
  private readonly entries = new Map<string, JournalEntry>();
  private readonly inbox = new Map<string, InboxSignal>();
  /** The due-index attributes of inbox items (by key), as the adapter writes them. */
  private readonly inboxDue = new Map<string, { jobId: string; dueBucket: string; dueAt: number }>();
  /** Every call, in order. */
  readonly calls: { method: 'get' | 'record' | 'signal' | 'deliver'; key: string }[] = [];

  async get({ jobId, kind, name }: { jobId: string; kind: JournalKind; name: string }) {
    const key = journalKey(jobId, kind, name);
    this.calls.push({ method: 'get', key });
    const entry = this.entries.get(key);
    return entry ? copy(entry) : undefined;
  }

  async record(input: JournalRecord) {
    const key = journalKey(input.jobId, input.kind, input.name);
    this.calls.push({ method: 'record', key });
    const existing = this.entries.get(key);
    if (existing) return { recorded: false as const, existing: copy(existing) };
    this.entries.set(key, { value: copy(input.value ?? null), at: new Date(input.at).toISOString() });
    return { recorded: true as const };
  }

  async signal({ jobId, name }: { jobId: string; name: string }) {
    const key = journalKey(jobId, 'inbox', name);
    this.calls.push({ method: 'signal', key });
    const signal = this.inbox.get(key);
    return signal ? copy(signal) : undefined;
  }

  async deliver(input: InboxDelivery) {
    const key = journalKey(input.jobId, 'inbox', input.name);
    this.calls.push({ method: 'deliver', key });
    const existing = this.inbox.get(key);
    if (existing) return { stored: false as const, existing: copy(existing) };
    this.inbox.set(key, copy({ ...input.signal, payload: input.signal.payload ?? null }));
    const { dueAt } = input;
    if (dueAt !== undefined)
      this.inboxDue.set(key, { jobId: input.jobId, dueBucket: dueBucket(dueAt, input.jobId), dueAt });
    return { stored: true as const };
  }

  /** The `byDue` entries of inbox items (their keys and due attributes). Not a call. */
  dueEntries(): { pk: string; dueBucket: string; dueAt: number }[] {
    return [...this.inboxDue].map(([pk, due]) => ({ pk, dueBucket: due.dueBucket, dueAt: due.dueAt }));
  }

  /** `DueIndex.moveDue` on an inbox item: false unless it is there with `dueAt` = `from`. Not a call. */
  moveDue(pk: string, from: number | undefined, to: number): boolean {
    const signal = this.inbox.get(pk);
    const due = this.inboxDue.get(pk);
    if (!signal || due?.dueAt !== from) return false;
    const jobId = due?.jobId ?? inboxOf(pk)?.jobId ?? '';
    this.inboxDue.set(pk, { jobId, dueBucket: dueBucket(to, jobId), dueAt: to });
    return true;
  }

  /** How many entries of `kind` were recorded for the job. Not a call. */
  count(jobId: string, kind: JournalKind): number {
    const prefix = journalKey(jobId, kind, '');
    return [...this.entries.keys()].filter((k) => k.startsWith(prefix)).length;
  }
}
