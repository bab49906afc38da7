/** An in-memory {@link Journal}, held to the same contract as DynamoJournal (test/contract/journal.contract.ts). */

import { dueBucket } from '../../shared/core/due';
import type {
  InboxDelivery,
  InboxSignal,
  Journal,
  JournalEntry,
  JournalKind,
  JournalRecord,
  JournalScope,
  RecordedEntries,
} from '../../shared/core/journal';
import { inboxKey, journalKey } from '../../shared/core/journal';
import { incarnationOf } from '../../shared/core/table';

const copy = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

export class FakeJournal implements Journal {
  /** Entries by partition key (one incarnation's journal), then by sort key (`<kind>#<name>`), as the table holds them. */
  private readonly entries = new Map<string, Map<string, JournalEntry>>();
  private readonly inbox = new Map<string, InboxSignal>();
  /** The due-index attributes of inbox items (by key), as the adapter writes them. */
  private readonly inboxDue = new Map<string, { jobId: string; dueBucket: string; dueAt: number }>();
  /** Every call, in order. */
  readonly calls: { method: 'get' | 'load' | 'record' | 'signal' | 'deliver'; key: string }[] = [];

  private journalOf(scope: JournalScope): Map<string, JournalEntry> {
    const { pk } = journalKey(scope, 'step', '');
    const journal = this.entries.get(pk) ?? new Map<string, JournalEntry>();
    this.entries.set(pk, journal);
    return journal;
  }

  async get(input: JournalScope & { kind: JournalKind; name: string }) {
    const { pk, sk } = journalKey(input, input.kind, input.name);
    this.calls.push({ method: 'get', key: `${pk}/${sk}` });
    const entry = this.journalOf(input).get(sk);
    return entry ? copy(entry) : undefined;
  }

  async load(scope: JournalScope): Promise<RecordedEntries> {
    const { pk } = journalKey(scope, 'step', '');
    this.calls.push({ method: 'load', key: pk });
    return new Map([...this.journalOf(scope)].map(([sk, entry]) => [sk, copy(entry)]));
  }

  async record(input: JournalRecord) {
    const { pk, sk } = journalKey(input, input.kind, input.name);
    this.calls.push({ method: 'record', key: `${pk}/${sk}` });
    const journal = this.journalOf(input);
    const existing = journal.get(sk);
    if (existing) return { recorded: false as const, existing: copy(existing) };
    journal.set(sk, {
      value: copy(input.value ?? null),
      at: new Date(input.at).toISOString(),
      ...(input.mark ? { mark: copy(input.mark) } : {}),
    });
    return { recorded: true as const };
  }

  async signal(input: JournalScope & { name: string }) {
    const { pk, sk } = inboxKey(input, input.name);
    this.calls.push({ method: 'signal', key: `${pk}/${sk}` });
    const signal = this.inbox.get(`${pk}/${sk}`);
    return signal ? copy(signal) : undefined;
  }

  async deliver(input: InboxDelivery) {
    const { pk, sk } = inboxKey(input, input.name);
    this.calls.push({ method: 'deliver', key: `${pk}/${sk}` });
    const existing = this.inbox.get(`${pk}/${sk}`);
    if (existing) return { stored: false as const, existing: copy(existing) };
    this.inbox.set(`${pk}/${sk}`, copy({ ...input.signal, payload: input.signal.payload ?? null }));
    const { dueAt } = input;
    if (dueAt !== undefined)
      this.inboxDue.set(`${pk}/${sk}`, { jobId: input.jobId, dueBucket: dueBucket(dueAt, input.jobId), dueAt });
    return { stored: true as const };
  }

  /** The `byDue` entries of inbox items (their keys and due attributes). Not a call. */
  dueEntries(): { pk: string; sk: string; dueBucket: string; dueAt: number }[] {
    return [...this.inboxDue].map(([key, due]) => {
      const [pk, sk] = key.split('/') as [string, string];
      return { pk, sk, dueBucket: due.dueBucket, dueAt: due.dueAt };
    });
  }

  /** `DueIndex.moveDue` on an inbox item: false unless it is there with `dueAt` = `from`. Not a call. */
  moveDue(key: { pk: string; sk: string }, from: number | undefined, to: number): boolean {
    const at = `${key.pk}/${key.sk}`;
    const signal = this.inbox.get(at);
    const due = this.inboxDue.get(at);
    if (!signal || !due || due.dueAt !== from) return false;
    this.inboxDue.set(at, { jobId: due.jobId, dueBucket: dueBucket(to, due.jobId), dueAt: to });
    return true;
  }

  /**
   * How many entries of `kind` were recorded for the job: of the incarnation created at
   * `createdAt`, or of every incarnation of the id. Not a call.
   */
  count(jobId: string, kind: JournalKind, createdAt?: string): number {
    const prefix =
      createdAt === undefined
        ? `job#${jobId}#`
        : journalKey({ jobId, incarnation: incarnationOf(createdAt) }, kind, '').pk;
    let n = 0;
    for (const [pk, journal] of this.entries) {
      if (!pk.startsWith(prefix) || !pk.endsWith('#journal')) continue;
      for (const sk of journal.keys()) if (sk.startsWith(`${kind}#`)) n += 1;
    }
    return n;
  }
}
