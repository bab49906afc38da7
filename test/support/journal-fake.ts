/** An in-memory {@link Journal}, held to the same contract as DynamoJournal (test/contract/journal.contract.ts). */
import type {
  InboxDelivery,
  InboxSignal,
  Journal,
  JournalEntry,
  JournalKind,
  JournalRecord,
} from '../../shared/core/journal';
import { journalKey } from '../../shared/core/journal';

const copy = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

export class FakeJournal implements Journal {
  private readonly entries = new Map<string, JournalEntry>();
  private readonly inbox = new Map<string, InboxSignal>();
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
    return { stored: true as const };
  }

  /** How many entries of `kind` were recorded for the job. Not a call. */
  count(jobId: string, kind: JournalKind): number {
    const prefix = journalKey(jobId, kind, '');
    return [...this.entries.keys()].filter((k) => k.startsWith(prefix)).length;
  }
}
