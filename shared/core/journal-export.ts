/**
 * A job's journal as a JSON file (`orrery journal export`): what `orrery replay-check` and the
 * testing kit's `replayCheck` replay a new handler against before it is deployed. It holds the
 * job's id, type, payload and creation time, its entries (oldest position first) with their
 * marks (core/replay.ts), and the inbox signals its recorded waits returned. Kept in the app's
 * repository as fixtures, it lets CI catch a change that would not replay (docs/workflows.md,
 * "Changing code safely").
 */
import { ValidationError } from '../errors';
import {
  type EntryMark,
  entryName,
  type InboxSignal,
  JOURNAL_KINDS,
  type JournalKind,
  parseEntryName,
  type RecordedEntries,
} from './journal';

/** The format name and version a journal file carries. */
export const JOURNAL_EXPORT_FORMAT = 'orrery-journal/1';

/** One entry of a journal file. */
export interface ExportedEntry {
  kind: JournalKind;
  name: string;
  value: unknown;
  /** ISO 8601 time it was recorded. */
  at: string;
  mark?: EntryMark;
}

/** A journal file: the job, its entries and the signals its waits took from the inbox. */
export interface JournalExport {
  format: typeof JOURNAL_EXPORT_FORMAT;
  job: { id: string; type: string; payload: unknown; createdAt: string; state?: string };
  entries: ExportedEntry[];
  /** Inbox signals by name: a wait whose recorded outcome is the inbox's signal returns its payload. @default none */
  inbox?: Record<string, InboxSignal>;
}

/**
 * A job's journal as a file: entries sorted by position (unmarked ones by time, after them).
 * @example
 * const file = journalExport(job, await journal.load(journalScopeOf(job)));
 */
export function journalExport(
  job: { id: string; type: string; payload: unknown; createdAt: string; state?: string },
  entries: RecordedEntries,
  inbox: Record<string, InboxSignal> = {},
): JournalExport {
  const list: ExportedEntry[] = [];
  for (const [key, entry] of entries) {
    const parsed = parseEntryName(key);
    if (!parsed) continue;
    list.push({ ...parsed, value: entry.value, at: entry.at, ...(entry.mark ? { mark: entry.mark } : {}) });
  }
  const order = (e: ExportedEntry) => e.mark?.seq ?? Number.MAX_SAFE_INTEGER;
  list.sort((a, b) => order(a) - order(b) || Date.parse(a.at) - Date.parse(b.at));
  return {
    format: JOURNAL_EXPORT_FORMAT,
    job: {
      id: job.id,
      type: job.type,
      payload: job.payload,
      createdAt: job.createdAt,
      ...(job.state ? { state: job.state } : {}),
    },
    entries: list,
    ...(Object.keys(inbox).length > 0 ? { inbox } : {}),
  };
}

/**
 * Checks a parsed journal file. Throws a {@link ValidationError} naming the file (`source`) and
 * the first field that is wrong.
 * @example
 * const file = parseJournalExport(JSON.parse(text), 'journals/order-1.json');
 */
export function parseJournalExport(value: unknown, source: string): JournalExport {
  const fail = (path: string, message: string): never => {
    throw new ValidationError(`${source}: ${path} ${message}`, [{ path, message }], 'invalid_journal');
  };
  const file = value as Partial<JournalExport> | null;
  if (typeof file !== 'object' || file === null) return fail('(file)', 'must be a JSON object');
  if (file.format !== JOURNAL_EXPORT_FORMAT) fail('format', `must be "${JOURNAL_EXPORT_FORMAT}"`);
  const job = file.job as JournalExport['job'] | undefined;
  if (typeof job !== 'object' || job === null) return fail('job', 'must be an object');
  for (const field of ['id', 'type', 'createdAt'] as const) {
    if (typeof job[field] !== 'string') fail(`job.${field}`, 'must be a string');
  }
  if (!Array.isArray(file.entries)) return fail('entries', 'must be an array');
  file.entries.forEach((e, i) => {
    if (typeof e !== 'object' || e === null) fail(`entries[${i}]`, 'must be an object');
    if (!JOURNAL_KINDS.includes(e.kind)) fail(`entries[${i}].kind`, `must be one of ${JOURNAL_KINDS.join(', ')}`);
    if (typeof e.name !== 'string') fail(`entries[${i}].name`, 'must be a string');
    if (typeof e.at !== 'string') fail(`entries[${i}].at`, 'must be an ISO 8601 time');
    if (e.mark !== undefined && !Number.isInteger(e.mark?.seq)) fail(`entries[${i}].mark.seq`, 'must be an integer');
  });
  return file as JournalExport;
}

/** A journal file's entries as a journal loads them (by `<kind>#<name>`). */
export function recordedEntriesOf(file: JournalExport): RecordedEntries {
  return new Map(
    file.entries.map((e) => [
      entryName(e.kind, e.name),
      { value: e.value ?? null, at: e.at, ...(e.mark ? { mark: e.mark } : {}) },
    ]),
  );
}
