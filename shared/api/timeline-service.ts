/**
 * `GET /jobs/{id}/timeline`: a job's run as its journal recorded it, for the dashboard's run view
 * and `orrery timeline`. Each attempt the job item knows (its bounded error history and its
 * current attempt), and the journal's entries in the order they were recorded: steps (with the
 * size of the result and a short preview), sleeps (until when), signal and event waits (until
 * when, and what ended them: a signal, an event or the timeout) and invokes (the child, its type
 * and state). Read only: one read of the job, its journal's current series (strongly consistent,
 * in pages of 1 MB: one read unit per 4 KB, as `GET /jobs/{id}/invoked`), one read of each
 * invoked child on the page asked for, and one read of the inbox for each signal wait on the page
 * whose signal the send recorded (its payload stays in the inbox). Writes nothing.
 */
import * as z from 'zod';
import type { TypeScope } from '../core/access';
import type { Clock } from '../core/clock';
import { JOB_ID_PATTERN } from '../core/enqueue';
import { EVENT_SIGNAL_PREFIX } from '../core/event-waits';
import type { InvokeStart } from '../core/invoke';
import type { Job } from '../core/job';
import {
  type Journal,
  type JournalEntry,
  type JournalKind,
  journalScopeOf,
  parseEntryName,
  type RecordedEntries,
} from '../core/journal';
import { jsonBytes } from '../core/limits';
import type { JobStore } from '../core/ports';
import type { JobState } from '../core/states';
import { NotFoundError, ValidationError } from '../errors';
import { mapWithConcurrency } from './concurrency';
import { jobStateSchema } from './schemas';

/** Journal entries on one page of `GET /jobs/{id}/timeline`. */
export const TIMELINE_PAGE_SIZE = 100;

/** Longest preview of a step's result or a signal's payload, in characters of its JSON. */
export const PREVIEW_CHARS = 120;

/** Child reads in flight at once for one page. */
const READ_CONCURRENCY = 10;

const isoTime = z.iso.datetime();
const attemptRef = z
  .int()
  .nullable()
  .meta({ description: 'The index in `attempts` of the attempt that recorded the entry; null when none is known' });

const stepEntrySchema = z
  .object({
    kind: z.literal('step'),
    name: z.string().meta({ description: 'The step’s name (`ctx.step(name, …)`; `emit:<event>` for `ctx.emit`)' }),
    attempt: attemptRef,
    at: isoTime.meta({ description: 'When the step’s result was recorded (the step ended)' }),
    startedAt: isoTime.nullable().meta({
      description:
        'Estimated: the journal records when a step ended, so its start is taken as the end of the entry before ' +
        'it in its attempt (or the attempt’s start); null when neither is known',
    }),
    durationMs: z.number().nullable().meta({ description: '`at` − `startedAt`; null without `startedAt`' }),
    bytes: z.int().meta({ description: 'Size of the recorded result, as JSON' }),
    preview: z.string().meta({ description: `The result's JSON, cut at ${PREVIEW_CHARS} characters (… when cut)` }),
  })
  .strict();

const sleepEntrySchema = z
  .object({
    kind: z.literal('sleep'),
    name: z.string(),
    attempt: attemptRef,
    at: isoTime.meta({ description: 'When the sleep began (its wake time was recorded)' }),
    until: isoTime.meta({ description: 'When it wakes (or woke)' }),
    woke: z.boolean().meta({ description: 'Its wake time has passed' }),
  })
  .strict();

const waitEntrySchema = z
  .object({
    kind: z.literal('wait'),
    name: z.string().meta({ description: 'The signal’s name; an event wait’s is `event:<step>`' }),
    event: z.boolean().meta({ description: 'A `ctx.waitForEvent` (else a `ctx.waitForSignal`)' }),
    attempt: attemptRef,
    at: isoTime.meta({ description: 'When the wait began (its deadline, or its outcome when it did not wait)' }),
    until: isoTime.nullable().meta({ description: 'Its deadline; null when the signal was there before it waited' }),
    endedAt: isoTime.nullable().meta({ description: 'When its outcome was recorded; null while it waits' }),
    wokenBy: z
      .enum(['signal', 'event', 'timeout'])
      .nullable()
      .meta({ description: 'What ended it; null while it waits' }),
    preview: z
      .string()
      .nullable()
      .meta({ description: 'The payload it returned, as JSON, cut short; null when none is recorded in the journal' }),
  })
  .strict();

const invokeEntrySchema = z
  .object({
    kind: z.literal('invoke'),
    name: z.string().meta({ description: 'The invoke’s name (`ctx.invoke(name, …)`)' }),
    attempt: attemptRef,
    at: isoTime.meta({ description: 'When the child was started' }),
    child: z
      .object({
        id: z.string(),
        type: z.string().nullable().meta({ description: 'null when the job is no longer stored' }),
        state: jobStateSchema.nullable().meta({ description: 'null when the job is no longer stored' }),
      })
      .strict(),
    endedAt: isoTime.nullable().meta({ description: 'When the child’s end was recorded; null before' }),
    outcome: jobStateSchema.nullable().meta({ description: 'The child’s end as the invoking job recorded it' }),
  })
  .strict();

export const timelineEntrySchema = z.discriminatedUnion('kind', [
  stepEntrySchema,
  sleepEntrySchema,
  waitEntrySchema,
  invokeEntrySchema,
]);

export const timelineAttemptSchema = z
  .object({
    attempt: z.int().meta({ description: 'The attempt’s number in its series (a retry or a rerun starts at 1 again)' }),
    startedAt: isoTime.nullable().meta({ description: 'Known for the current attempt only' }),
    endedAt: isoTime.nullable().meta({ description: 'null while it runs or waits' }),
    outcome: z.string().meta({ description: '`failed` for an attempt of the error history, else the job’s state' }),
    error: z
      .object({ reason: z.string(), name: z.string(), message: z.string() })
      .strict()
      .optional()
      .meta({ description: 'Why a failed attempt failed' }),
  })
  .strict();

export const timelinePageSchema = z
  .object({
    id: z.string(),
    type: z.string(),
    state: jobStateSchema,
    series: z
      .string()
      .nullable()
      .meta({ description: 'The journal series read: the last rerun’s, null before any rerun' }),
    attempts: z.array(timelineAttemptSchema).meta({
      description:
        'Oldest first: the failed attempts the job keeps (its error history, the newest 10), then the current one',
    }),
    entries: z.array(timelineEntrySchema).meta({
      description: `In the order they were recorded, ${TIMELINE_PAGE_SIZE} a page; invokes of jobs of types the caller may not read are left out`,
    }),
    nextCursor: z
      .string()
      .nullable()
      .meta({ description: 'Pass as `cursor` for the next page; null on the last page' }),
  })
  .strict();

/** A page of a job's timeline. */
export type TimelinePage = z.output<typeof timelinePageSchema>;
export type TimelineEntry = z.output<typeof timelineEntrySchema>;
export type TimelineAttempt = z.output<typeof timelineAttemptSchema>;

export interface TimelineServiceDeps {
  store: JobStore;
  journal: Journal;
  clock: Clock;
}

/** A JSON value's text cut at {@link PREVIEW_CHARS}. */
export function preview(value: unknown): string {
  const text = JSON.stringify(value ?? null);
  return text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS)}…` : text;
}

const isoOf = (ms: unknown): string | null =>
  typeof ms === 'number' && Number.isFinite(ms) ? new Date(ms).toISOString() : null;

/**
 * The attempts a job item knows, oldest first: its failed attempts (the bounded error history),
 * then its current attempt (one started since the job's last retry or rerun) when it is not the
 * last of those. A job waiting on a sleep, a wait or an invoke is in the attempt it resumes.
 */
export function attemptsOf(job: Pick<Job, 'state' | 'attempts' | 'errors' | 'startedAt' | 'finishedAt' | 'controls'>) {
  const errors = [...job.errors].sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  const attempts: TimelineAttempt[] = errors.map((e) => ({
    attempt: e.attempt,
    startedAt: null,
    endedAt: e.at,
    outcome: 'failed',
    error: { reason: e.reason, name: e.name, message: e.message },
  }));
  const last = attempts.at(-1);
  const lastRestart = Math.max(
    Number.NEGATIVE_INFINITY,
    ...(job.controls ?? []).filter((c) => c.action !== 'cancel').map((c) => Date.parse(c.at)),
  );
  // a failed, held or retrying job's last attempt is the last of its error history
  const lastIsCurrent =
    last !== undefined &&
    (job.state === 'failed' || job.state === 'held' || job.state === 'retrying') &&
    last.attempt === job.attempts &&
    Date.parse(last.endedAt as string) > lastRestart;
  if (lastIsCurrent) last.startedAt = job.startedAt ?? null;
  else if (job.startedAt !== undefined) {
    // an attempt that ended to wait (a sleep, a wait, an invoke) gave its count back until it resumes
    const counted = ['running', 'held', 'succeeded', 'failed', 'cancelled', 'expired', 'skipped'].includes(job.state);
    attempts.push({
      attempt: Math.max(counted ? job.attempts : job.attempts + 1, 1),
      startedAt: job.startedAt,
      endedAt: job.finishedAt ?? null,
      outcome: job.state,
    });
  }
  return attempts;
}

interface Raw {
  kind: JournalKind;
  name: string;
  entry: JournalEntry;
  time: number;
}

/** A timeline entry as listed, before its page is cut: a step keeps its value until then. */
type Listed = TimelineEntry & { time: number; fromInbox?: boolean; value?: unknown };

/**
 * The journal's entries as timeline entries, in the order they were recorded, each with the
 * attempt (its index in `attempts`) whose window holds its time. A wait's deadline and outcome,
 * and an invoke's start and end, make one entry each. Invokes' children are filled in by the caller.
 */
export function timelineEntries(entries: RecordedEntries, attempts: readonly TimelineAttempt[], now: number): Listed[] {
  const raws: Raw[] = [];
  const byKey = new Map<string, Raw>();
  for (const [key, entry] of entries) {
    const parsed = parseEntryName(key);
    if (!parsed) continue;
    const raw = { ...parsed, entry, time: Date.parse(entry.at) };
    raws.push(raw);
    byKey.set(key, raw);
  }
  raws.sort((a, b) => {
    if (a.time !== b.time) return a.time - b.time;
    // one millisecond may hold several entries (a Promise.all's): the run's order (their marks'
    // positions) tells them apart when both have one, else the load's order (their names) stays
    const [x, y] = [a.entry.mark?.seq, b.entry.mark?.seq];
    return x !== undefined && y !== undefined ? x - y : 0;
  });
  const ends = attempts.map((a) => (a.endedAt === null ? Number.POSITIVE_INFINITY : Date.parse(a.endedAt)));
  const attemptAt = (time: number): number | null => {
    if (attempts.length === 0) return null;
    const i = ends.findIndex((end) => time <= end);
    return i < 0 ? attempts.length - 1 : i;
  };
  const out: Listed[] = [];
  /** When what came before was over (a step's end, a wait's wake), per attempt. */
  const ready = new Map<number | null, number>();
  const startOf = (attempt: number | null, time: number): number | undefined => {
    const candidates = [ready.get(attempt)];
    const started = attempt === null ? null : attempts[attempt]?.startedAt;
    if (started) candidates.push(Date.parse(started));
    const known = candidates.filter((c): c is number => c !== undefined && c <= time);
    return known.length > 0 ? Math.max(...known) : undefined;
  };
  const waitsSeen = new Set<string>();
  for (const raw of raws) {
    const attempt = attemptAt(raw.time);
    const at = raw.entry.at;
    const value = raw.entry.value;
    if (raw.kind === 'step') {
      const start = startOf(attempt, raw.time);
      out.push({
        kind: 'step',
        name: raw.name,
        attempt,
        at,
        startedAt: start === undefined ? null : new Date(start).toISOString(),
        durationMs: start === undefined ? null : raw.time - start,
        // size and preview are made for the page's entries only (the service fills them)
        bytes: 0,
        preview: '',
        value,
        time: raw.time,
      });
      ready.set(attempt, raw.time);
    } else if (raw.kind === 'sleep') {
      const until = typeof value === 'number' ? value : raw.time;
      out.push({
        kind: 'sleep',
        name: raw.name,
        attempt,
        at,
        until: new Date(until).toISOString(),
        woke: until <= now,
        time: raw.time,
      });
      ready.set(attempt, Math.max(raw.time, until));
    } else if (raw.kind === 'wait' || raw.kind === 'signal') {
      // one entry per wait: its deadline (`wait#`) and its outcome (`signal#`), whichever came first
      if (waitsSeen.has(raw.name)) continue;
      waitsSeen.add(raw.name);
      const deadline = byKey.get(`wait#${raw.name}`);
      const outcome = byKey.get(`signal#${raw.name}`);
      const event = raw.name.startsWith(EVENT_SIGNAL_PREFIX);
      const o = outcome?.entry.value as { payload?: unknown; received?: string; timedOutAt?: string } | undefined;
      const wokenBy =
        o === undefined ? null : typeof o?.timedOutAt === 'string' ? 'timeout' : event ? 'event' : 'signal';
      out.push({
        kind: 'wait',
        name: raw.name,
        event,
        attempt,
        at,
        until: isoOf(deadline?.entry.value),
        endedAt: outcome?.entry.at ?? null,
        wokenBy,
        preview: o !== undefined && o !== null && 'payload' in o ? preview(o.payload) : null,
        time: raw.time,
        // the send recorded the outcome: the payload is the inbox's signal
        ...(typeof o?.received === 'string' ? { fromInbox: true } : {}),
      });
      if (outcome) ready.set(attempt, Math.max(raw.time, outcome.time));
    } else if (raw.kind === 'invoke') {
      const start = value as InvokeStart;
      const end = byKey.get(`invoked#${raw.name}`);
      const outcome = (end?.entry.value as { state?: JobState } | undefined)?.state;
      out.push({
        kind: 'invoke',
        name: raw.name,
        attempt,
        at,
        child: { id: String(start?.id), type: null, state: null },
        endedAt: end?.entry.at ?? null,
        outcome: outcome ?? null,
        time: raw.time,
      });
      if (end) ready.set(attempt, Math.max(raw.time, end.time));
    }
    // `invoked#` is shown with its invoke, `rerun#` is the rerun's own bookkeeping
  }
  return out;
}

export class TimelineService {
  constructor(private readonly deps: TimelineServiceDeps) {}

  /**
   * The timeline of job `id`: its attempts, and {@link TIMELINE_PAGE_SIZE} journal entries from
   * `cursor` (an offset, as a previous page gave it). An invoke of a child of a type outside
   * `scope` is left out of its page. 404 `job_not_found` when the job is not stored.
   */
  async read(id: string, scope: TypeScope, cursor?: string): Promise<TimelinePage> {
    if (!JOB_ID_PATTERN.test(id)) throw new NotFoundError(`job ${JSON.stringify(id)} not found`, 'job_not_found');
    const offset = cursor === undefined || cursor === '' ? 0 : /^\d{1,6}$/.test(cursor) ? Number(cursor) : Number.NaN;
    if (Number.isNaN(offset)) {
      throw new ValidationError('invalid cursor', [{ path: 'cursor', message: 'must be a cursor a page gave' }]);
    }
    const now = this.deps.clock.now();
    const job = await this.deps.store.get(id);
    if (!job || (job.expiresAt !== undefined && job.expiresAt * 1000 < now)) {
      throw new NotFoundError(`job ${id} not found`, 'job_not_found');
    }
    const attempts = attemptsOf(job);
    const journalScope = journalScopeOf(job);
    const all = timelineEntries(await this.deps.journal.load(journalScope), attempts, now);
    const slice = all.slice(offset, offset + TIMELINE_PAGE_SIZE);
    const filled = await mapWithConcurrency(
      slice,
      READ_CONCURRENCY,
      async ({ time: _, fromInbox, value, ...entry }) => {
        if (entry.kind === 'step') return { ...entry, bytes: jsonBytes(value ?? null), preview: preview(value) };
        if (entry.kind === 'wait' && fromInbox) {
          const signal = await this.deps.journal.signal({ ...journalScope, name: entry.name });
          return { ...entry, preview: signal ? preview(signal.payload) : null };
        }
        if (entry.kind !== 'invoke') return entry;
        const child = await this.deps.store.get(entry.child.id);
        const type = child?.type ?? null;
        if (type !== null && scope.kind !== 'all' && !(scope.kind === 'some' && scope.types.has(type)))
          return undefined;
        return { ...entry, child: { id: entry.child.id, type, state: (child?.state ?? null) as JobState | null } };
      },
    );
    const next = offset + TIMELINE_PAGE_SIZE;
    return {
      id,
      type: job.type,
      state: job.state,
      series: job.journal ?? null,
      attempts,
      entries: filled.filter((entry): entry is TimelineEntry => entry !== undefined),
      nextCursor: next < all.length ? String(next) : null,
    };
  }
}
