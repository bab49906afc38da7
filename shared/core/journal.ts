/**
 * A job's journal: what its handler recorded as it went (`ctx.step` results, the wake time of a
 * `ctx.sleep`, the deadline and outcome of a `ctx.waitForSignal`), and its signal inbox. Each
 * entry is an item of its own, written once (the first write wins) and never rewritten, so a
 * job's entries are bound by neither the 400 KB item limit nor a count, and the status item stays
 * small. The entries of one incarnation of a job id ({@link incarnationOf}) share a partition key
 * and are read together, in pages ({@link Journal.load}); a later job of the same id has a journal
 * and an inbox of its own. See docs/workflows.md.
 */
import { ValidationError } from '../errors';
import { jsonBytes } from './limits';
import { type ItemKey, incarnationOf, owned } from './table';

/**
 * What an entry records: a step's result, a sleep's wake time, a signal wait's deadline or
 * outcome, an invoke's child (`invoke`: `{ id, index }`) and the child's end (`invoked`: an
 * `InvokeOutcome`, core/invoke.ts).
 */
export type JournalKind = 'step' | 'sleep' | 'wait' | 'signal' | 'invoke' | 'invoked' | 'rerun';

/** Every {@link JournalKind}: how an entry's name (`<kind>#<name>`) is told apart. */
export const JOURNAL_KINDS: readonly JournalKind[] = ['step', 'sleep', 'wait', 'signal', 'invoke', 'invoked', 'rerun'];

/** One recorded entry. `value` is the JSON value as recorded (a step's result, `null` for none). */
export interface JournalEntry {
  value: unknown;
  /** ISO 8601 time it was recorded. */
  at: string;
  /** Where the run made the call, and with what code (core/replay.ts). @default none (an entry the API recorded, or one older than marks) */
  mark?: EntryMark;
}

/**
 * What the worker writes on each entry beside its value, in the same item (no write of its own):
 * the call's position in the run, the code version that recorded it, and the patches the run
 * took (`ctx.patched`) before it. Entries recorded before marks existed, and signal outcomes the
 * API records, have none. See core/replay.ts.
 */
export interface EntryMark {
  /** The call's position in its run: its handler's `seq`-th `ctx` call, from 0. */
  seq: number;
  /** The code version that recorded the entry. @default none */
  version?: string;
  /** `ctx.patched` names this run took (answered true) before the entry was recorded. @default none */
  patches?: string[];
  /**
   * The call began while another `ctx` call of the run was in flight (racing chains): its position
   * is not a barrier of the recorded run, so a replay does not hold another call's position
   * against it. @default false (written only when true)
   */
  racing?: boolean;
  /**
   * The call was made in the body of the step at `seq` (a step nested in a step): a replay gets
   * that step's recorded result and never makes it, so it takes no position of its own.
   * @default false (written only when true)
   */
  nested?: boolean;
}

/** A signal in a job's inbox (`POST /jobs/{id}/signals/{name}`). */
export interface InboxSignal {
  payload: unknown;
  /** SHA-256 of the canonical JSON of the payload: a replay of the same send is told from another. */
  payloadHash: string;
  /** ISO 8601 time it arrived. */
  at: string;
}

/**
 * Whose journal: one incarnation of a job id. `incarnation` is {@link incarnationOf} the job's
 * `createdAt`; the journal takes it as an opaque name.
 */
export interface JournalScope {
  jobId: string;
  incarnation: string;
  /**
   * The journal's series: a rerun (`POST /jobs/{id}/rerun`) starts the job's journal again under
   * a new series name (`job#<id>#<incarnation>.<series>#journal`), with copies of the entries it
   * keeps, so nothing written to the old one reaches it. The inbox is the incarnation's and has no
   * series. @default the job's first journal
   */
  series?: string;
}

/**
 * The journal scope of a job as stored: its incarnation, and the series its last rerun started.
 * @example
 * journal.load(journalScopeOf(job));
 */
export function journalScopeOf(job: { id: string; createdAt: string; journal?: string }): JournalScope {
  return {
    jobId: job.id,
    incarnation: incarnationOf(job.createdAt),
    ...(job.journal !== undefined ? { series: job.journal } : {}),
  };
}

/** A journal's recorded entries by {@link entryName} (`<kind>#<name>`), as {@link Journal.load} reads them. */
export type RecordedEntries = ReadonlyMap<string, JournalEntry>;

/** What {@link Journal.record} writes. */
export interface JournalRecord extends JournalScope {
  kind: JournalKind;
  name: string;
  value: unknown;
  /** Epoch ms it was recorded. */
  at: number;
  /** Epoch seconds: TTL of the entry. */
  expiresAt: number;
  /** The call's position, version and patches, in the same item. @default none */
  mark?: EntryMark;
}

/** What {@link Journal.deliver} writes. */
export interface InboxDelivery extends JournalScope {
  name: string;
  signal: InboxSignal;
  /** Epoch seconds: TTL of the signal. */
  expiresAt: number;
  /**
   * Epoch ms when the supervisor looks whether the job resumed (`SIGNAL_LOOK_MS` after the
   * signal): the inbox item's due entry, written with it at no extra request (1 index write
   * unit), so a job whose wake after this write is lost is found. @default no due entry
   */
  dueAt?: number;
}

/**
 * What `POST /jobs/{id}/signals/{name}` (and the client's `signal`) answers. A signal accepted is
 * either returned by the job's `ctx.waitForSignal(name)` (`late: false`: now if `resumed`, else
 * when the job waits for it), or came after that wait had recorded its timeout (`late: true`).
 */
export interface SignalReceipt {
  jobId: string;
  signal: string;
  /** ISO 8601 time the signal was stored (the first send's, for a replay). */
  receivedAt: string;
  /** The job was waiting for this signal: it is due now, and its message was sent. */
  resumed: boolean;
  /**
   * The job's wait for this signal had already timed out (its outcome, `null` or a
   * `SignalTimeoutError`, was recorded first): no wait returns this signal, and the job was not
   * woken. `false`: the wait returns it.
   */
  late: boolean;
  /** A replay of a send already stored (same payload): nothing new was stored. */
  duplicate: boolean;
}

/**
 * The outcome of a signal wait, as its `signal` entry records it. Written once, the first write
 * wins, by whichever comes first: the wait that took the signal from the inbox (`payload`), the
 * send that stored it (`received`: the signal in the inbox, received then, is the outcome; its
 * payload is not copied), or the wait whose deadline passed (`timedOutAt`).
 */
export type SignalOutcome = { payload: unknown } | { received: string } | { timedOutAt: string };

/** The time a recorded signal outcome says the wait timed out, or undefined when a signal is its outcome. */
export function timedOutAt(outcome: unknown): string | undefined {
  const at = (outcome as { timedOutAt?: unknown } | null)?.timedOutAt;
  return typeof at === 'string' ? at : undefined;
}

/** Persistence of job journals and signal inboxes. */
export interface Journal {
  /** The entry, or undefined when none was recorded. Strongly consistent: one read unit up to 4 KB. */
  get(input: JournalScope & { kind: JournalKind; name: string }): Promise<JournalEntry | undefined>;
  /**
   * Every entry the incarnation recorded (not its inbox), strongly consistent, read in pages of
   * 1 MB: at most ⌈bytes / 1 MB⌉ + 1 round trips, one read unit per 4 KB. A run that replays
   * loads it once, at its first call that needs a recorded entry.
   */
  load(input: JournalScope): Promise<RecordedEntries>;
  /**
   * Records an entry unless one exists: the first write wins, and a later one gets the recorded
   * entry back (`recorded: false`) without changing it. One conditional write: 1 write unit per KB.
   */
  record(input: JournalRecord): Promise<{ recorded: true } | { recorded: false; existing: JournalEntry }>;
  /** The signal of that name in the job's inbox, if one arrived. */
  signal(input: JournalScope & { name: string }): Promise<InboxSignal | undefined>;
  /**
   * Puts a signal in the job's inbox unless one of that name is there: the first send wins, and a
   * later one gets the stored signal back (`stored: false`). One conditional write.
   */
  deliver(input: InboxDelivery): Promise<{ stored: true } | { stored: false; existing: InboxSignal }>;
}

/** Step, sleep and signal names: 1–200 characters, printable, no `#` (it separates key parts). */
export const STEP_NAME_PATTERN = /^[^\p{Cc}#]{1,200}$/u;
/** Largest step result, as JSON: a step result is stored whole, in its own item. */
export const MAX_STEP_RESULT_BYTES = 64 * 1024;
/** Largest signal payload, as JSON. */
export const MAX_SIGNAL_BYTES = 64 * 1024;
/** Longest sleep, and longest signal wait: the scheduling horizon. */
export const MAX_WAIT_MS = 366 * 86_400_000;
/**
 * How long journal entries and inbox signals are kept: a year of waits plus a year of retries and
 * retention after they were written (entries are never rewritten, so they cannot follow the job's TTL).
 */
export const JOURNAL_RETENTION_DAYS = 2 * 366;

/** Throws a {@link ValidationError} (`invalid_name`) for a name no entry may have. */
export function checkName(name: unknown, what: 'step' | 'sleep' | 'signal' | 'invoke', path = 'name'): string {
  if (typeof name !== 'string' || !STEP_NAME_PATTERN.test(name)) {
    throw new ValidationError(
      `${what} name must be 1-200 printable characters without "#"`,
      [{ path, message: 'must be 1-200 printable characters without "#"' }],
      'invalid_name',
    );
  }
  return name;
}

/** An entry's name in its journal, and its item's sort key: `<kind>#<name>`. */
export function entryName(kind: JournalKind, name: string): string {
  return `${kind}#${name}`;
}

/**
 * The key of a journal entry's item: `pk` = `job#<id>#<incarnation>#journal` (one item collection
 * per incarnation, read with one Query), `sk` = `<kind>#<name>`.
 */
export function journalKey(scope: JournalScope, kind: JournalKind, name: string): ItemKey {
  // a series rides on the incarnation's segment (`job#<id>#<inc>.<series>#journal`): every journal
  // partition still ends in `#journal`, the partitions the worker's and the API's Query grants name
  const owner = scope.series === undefined ? scope.incarnation : `${scope.incarnation}.${scope.series}`;
  return { pk: owned(scope.jobId, owner, 'journal'), sk: entryName(kind, name) };
}

/** An entry's kind and name from its name in the journal (`<kind>#<name>`), or undefined for another key. */
export function parseEntryName(key: string): { kind: JournalKind; name: string } | undefined {
  const at = key.indexOf('#');
  if (at < 0) return undefined;
  const kind = key.slice(0, at) as JournalKind;
  return JOURNAL_KINDS.includes(kind) ? { kind, name: key.slice(at + 1) } : undefined;
}

/** One entry a rerun keeps: copied, as recorded, into the journal's new series. */
export interface KeptEntry {
  kind: JournalKind;
  name: string;
  entry: JournalEntry;
}

/** What a rerun keeps of a journal ({@link cutJournal}). */
export interface JournalCut {
  /** The entries recorded before the cut, oldest first. */
  kept: KeptEntry[];
  /** How many entries the rerun drops (the cut entry and every one recorded at or after it). */
  dropped: number;
  /** One above the highest invoke edge index of the whole journal (0 without invokes): new invokes start there. */
  nextInvokeIndex: number;
}

/**
 * Where a rerun cuts a journal: it keeps the entries recorded before the entry named `fromStep`
 * (a step, an emit's `emit:<event>` step, a sleep, a signal or event wait, or an invoke, looked
 * up by name: the step of that name when there is one, else the first entry of that name
 * whatever its kind) and drops that entry and every one recorded at or after it. Without
 * `fromStep` it keeps nothing (the job runs again from the start).
 * Undefined when no entry has that name. Entries are ordered by the time they were recorded
 * (`at`, in ms); one recorded in the same millisecond as the cut entry is dropped with it.
 * @example
 * cutJournal(entries, 'charge'); // { kept: [the entries before "charge"], dropped: 3, nextInvokeIndex: 0 }
 */
export function cutJournal(entries: RecordedEntries, fromStep?: string): JournalCut | undefined {
  const all: (KeptEntry & { time: number })[] = [];
  let nextInvokeIndex = 0;
  for (const [key, entry] of entries) {
    const parsed = parseEntryName(key);
    if (!parsed) continue;
    all.push({ ...parsed, entry, time: Date.parse(entry.at) });
    if (parsed.kind === 'invoke' || parsed.kind === 'rerun') {
      const next = invokeFloorOf(parsed.kind, entry.value);
      if (next !== undefined) nextInvokeIndex = Math.max(nextInvokeIndex, next);
    }
  }
  let cutAt = Number.NEGATIVE_INFINITY;
  if (fromStep !== undefined) {
    const named = all.filter((e) => e.kind !== 'rerun' && e.name === fromStep);
    if (named.length === 0) return undefined;
    // names are unique per kind only: a step of the name is the one meant (the dashboard's
    // "Rerun from here" sits on steps), not a sleep, wait or invoke of that name before it
    const steps = named.filter((e) => e.kind === 'step');
    cutAt = Math.min(...(steps.length > 0 ? steps : named).map((e) => e.time));
  }
  // a rerun's own marker is written again by the next rerun when it matters
  const kept = all
    .filter((e) => e.kind !== 'rerun' && e.time < cutAt)
    .sort((a, b) => a.time - b.time)
    .map(({ kind, name, entry }) => ({ kind, name, entry }));
  const markers = all.filter((e) => e.kind === 'rerun').length;
  return { kept, dropped: all.length - markers - kept.length, nextInvokeIndex };
}

/** The next free invoke index an `invoke#` entry (its index + 1) or a rerun's marker (`nextInvokeIndex`) says. */
export function invokeFloorOf(kind: JournalKind, value: unknown): number | undefined {
  if (kind === 'invoke') {
    const index = (value as { index?: unknown } | null)?.index;
    return typeof index === 'number' ? index + 1 : undefined;
  }
  if (kind === 'rerun') {
    const next = (value as { nextInvokeIndex?: unknown } | null)?.nextInvokeIndex;
    return typeof next === 'number' ? next : undefined;
  }
  return undefined;
}

/**
 * The marker a rerun records in the new series (`rerun#marker`) when the journal it cut had invokes:
 * new invokes take edge indexes from `nextInvokeIndex` on, so none reuses an index a dropped
 * invoke's child (still running, perhaps) names in its registry.
 */
export const RERUN_MARKER = 'marker';

/**
 * The key of an inbox signal's item: `pk` = `job#<id>#<incarnation>#inbox`, `sk` = `<name>`. Apart
 * from the journal: the API writes it while the job runs, so a wait reads it fresh (a GetItem).
 */
export function inboxKey(scope: JournalScope, name: string): ItemKey {
  return { pk: owned(scope.jobId, scope.incarnation, 'inbox'), sk: name };
}

/**
 * The job incarnation and signal of an inbox item's key ({@link inboxKey}), or undefined for any
 * other key: the supervisor tells the due entry of a signal from a job's by its key.
 */
export function inboxOf(key: { pk: string; sk?: string }): (JournalScope & { name: string }) | undefined {
  const match = /^job#([^#]+)#([^#]+)#inbox$/.exec(key.pk);
  if (!match || key.sk === undefined) return undefined;
  return { jobId: match[1] as string, incarnation: match[2] as string, name: key.sk };
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * A sleep's length: milliseconds (a number), or a text such as `"90s"`, `"15m"`, `"2h"`, `"7d"`,
 * `"1h30m"`. Throws a {@link ValidationError} for anything else.
 */
export function parseDuration(duration: number | string): number {
  if (typeof duration === 'number') {
    if (!Number.isFinite(duration) || duration < 0) {
      throw new ValidationError('a duration must be a finite number of milliseconds, at least 0', [
        { path: 'duration', message: 'must be a finite number of milliseconds, at least 0' },
      ]);
    }
    return duration;
  }
  const parts = [...duration.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== duration.trim()) {
    throw new ValidationError(`"${duration}" is not a duration such as "90s", "15m", "2h" or "7d"`, [
      { path: 'duration', message: 'must be a number of ms or a text such as "90s", "15m", "2h", "7d"' },
    ]);
  }
  return parts.reduce((sum, p) => sum + Number(p[1]) * (UNIT_MS[p[2] as string] as number), 0);
}

/**
 * When a sleep asked for at `now` ends: `for` is a duration ({@link parseDuration}) or a moment
 * (a Date or an ISO 8601 text with a zone). At most {@link MAX_WAIT_MS} ahead.
 */
export function wakeTime(sleepFor: number | string | Date, now: number): number {
  let until: number;
  if (sleepFor instanceof Date) until = sleepFor.getTime();
  else if (typeof sleepFor === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(sleepFor)) until = Date.parse(sleepFor);
  else until = now + parseDuration(sleepFor);
  if (!Number.isFinite(until)) {
    throw new ValidationError('a sleep must end at a valid time', [{ path: 'until', message: 'not a valid time' }]);
  }
  if (until - now > MAX_WAIT_MS) {
    throw new ValidationError('a sleep may last at most 366 days', [
      { path: 'duration', message: 'must end at most 366 days ahead' },
    ]);
  }
  return until;
}

/** Checks a value a journal stores: JSON, at most `limit` bytes. Returns the JSON value (`undefined` → null). */
export function storableValue(value: unknown, limit: number, what: string): unknown {
  let size: number;
  try {
    size = jsonBytes(value ?? null);
  } catch (error) {
    throw new ValidationError(`${what} is not JSON-serialisable: ${error instanceof Error ? error.message : error}`, [
      { path: what, message: 'must be JSON-serialisable' },
    ]);
  }
  if (size > limit) {
    throw new ValidationError(`${what} is ${size} bytes of JSON; the limit is ${limit}`, [
      { path: what, message: `must be at most ${limit} bytes of JSON` },
    ]);
  }
  return value === undefined ? null : JSON.parse(JSON.stringify(value));
}
