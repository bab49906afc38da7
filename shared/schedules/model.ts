/**
 * Recurring schedules: the stored definition and the rules that turn a request (see ./request.ts)
 * into a valid EventBridge Scheduler expression. Pure domain code (no AWS, no zod: the worker
 * and the supervisor load this module, and need none of the API's schemas).
 *
 * A schedule lives in the job table as two items: `schedule#<name>` (small: the definition
 * without the payload, plus its firing state, rewritten at every fire) and
 * `schedule#<name>#payload` (the payload, written only by the API). Its EventBridge Scheduler
 * schedule (see {@link triggerName}) is only the trigger; the item is the source of truth.
 */
import { DUE_GRACE_MS } from '../core/due';
import {
  isValidTimeZone,
  nextFireTime,
  type ParsedExpression,
  parseScheduleExpression,
  ScheduleExpressionError,
  translateCron5,
} from '../core/schedule-expression';
import { fnv1a } from '../core/table';
import { type FieldIssue, ValidationError } from '../errors';

/** Schedule names: like job ids (1–64 of `A-Za-z0-9_.-`, starting with a letter or digit). */
export const SCHEDULE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** What a fire does while the schedule's previous run is still queued or running. */
export const OVERLAP_POLICIES = ['allow', 'skip', 'queue-one'] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

export type ScheduleState = 'enabled' | 'paused';

/** What a caller did to a schedule (delete and run leave no record on it: see the `operator action` log). */
export const SCHEDULE_CHANGE_ACTIONS = ['create', 'update', 'pause', 'resume'] as const;
export type ScheduleChangeAction = (typeof SCHEDULE_CHANGE_ACTIONS)[number];

/** The latest change a caller made to a schedule: who, what and when. */
export interface ScheduleChange {
  action: ScheduleChangeAction;
  /** The caller's ARN as it signed (an assumed role's carries its session), or `anonymous`. */
  by: string;
  /** ISO 8601 time. */
  at: string;
}

/**
 * A schedule as stored (without its payload). `version` grows at every write; every write is
 * conditioned on the version it read, so a fire and an API update never overwrite each other.
 */
export interface Schedule {
  name: string;
  type: string;
  /** The trigger as the caller gave it (one of the two). */
  cron?: string;
  rate?: string;
  /** The EventBridge Scheduler expression: `cron(...)` (six fields) or `rate(...)`. */
  expression: string;
  timezone: string;
  /** ISO 8601: no fire before `startAt`, none at or after `endAt`. */
  startAt?: string;
  endAt?: string;
  /** `rate()` schedules fire at `anchorAt + k × period` (epoch ms, whole seconds). */
  anchorAt?: number;
  maxAttempts: number;
  overlap: OverlapPolicy;
  /**
   * The priority of every run, for a job type with a `priority` option: the request's, else the
   * type's default when the schedule was written (as `maxAttempts` is). Absent for other types.
   */
  priority?: number;
  state: ScheduleState;
  /** SHA-256 of the canonical `{type, payload}`, as for jobs. */
  payloadHash: string;
  createdAt: string;
  updatedAt: string;
  version: number;
  /** Epoch ms of the next fire; absent when paused or finished (past `endAt`). */
  nextFireAt?: number;
  /** Epoch ms of the last fire handled (run or skipped). */
  lastFireAt?: number;
  /** The run created by the latest fire that created one. */
  lastRunId?: string;
  /** When that run was reserved (epoch ms): a reserved run not written yet counts as active. */
  lastRunReservedAt?: number;
  /**
   * Until when (epoch ms) that run, if found missing, can only be one never written: the
   * reservation time plus the retention in force then (a finished run is kept at least that
   * long). Stored, so that raising `retentionDays` later never re-creates a run TTL deleted.
   */
  lastRunConfirmUntil?: number;
  /** The run that run waits for (`queue-one`), kept so a run reserved but not written can be written later. */
  lastRunAfter?: string;
  /** Fires skipped by the overlap policy, and the latest such fire (epoch ms). */
  skipped: number;
  lastSkippedAt?: number;
  /** Fires that never arrived (Scheduler missed them and the supervisor came too late to catch up). */
  missed: number;
  /** When the supervisor looks at the schedule if it has not fired by then (see {@link withDue}). */
  dueAt?: number;
  /**
   * The latest change by a caller (create, update, pause, resume), written by the same write as
   * the change; fires keep it. Absent on schedules written before it was recorded.
   */
  changedBy?: ScheduleChange;
}

/** The schedule as the API returns it. */
export interface ScheduleView {
  name: string;
  type: string;
  payload?: unknown;
  cron: string | null;
  rate: string | null;
  expression: string;
  timezone: string;
  startAt: string | null;
  endAt: string | null;
  maxAttempts: number;
  overlap: OverlapPolicy;
  /** Only for job types with a `priority` option: the priority of every run. */
  priority?: number;
  state: ScheduleState;
  nextFireAt: string | null;
  lastFireAt: string | null;
  lastRunId: string | null;
  skipped: { count: number; lastAt: string | null };
  missed: number;
  createdAt: string;
  updatedAt: string;
  /** Only when recorded: who made the latest change, what it was and when. */
  changedBy?: ScheduleChange;
}

const isoOrNull = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());

export function toScheduleView(schedule: Schedule, payload?: unknown): ScheduleView {
  return {
    name: schedule.name,
    type: schedule.type,
    ...(payload !== undefined ? { payload } : {}),
    cron: schedule.cron ?? null,
    rate: schedule.rate ?? null,
    expression: schedule.expression,
    timezone: schedule.timezone,
    startAt: schedule.startAt ?? null,
    endAt: schedule.endAt ?? null,
    maxAttempts: schedule.maxAttempts,
    overlap: schedule.overlap,
    ...(schedule.priority !== undefined ? { priority: schedule.priority } : {}),
    state: schedule.state,
    nextFireAt: isoOrNull(schedule.nextFireAt),
    lastFireAt: isoOrNull(schedule.lastFireAt),
    lastRunId: schedule.lastRunId ?? null,
    skipped: { count: schedule.skipped, lastAt: isoOrNull(schedule.lastSkippedAt) },
    missed: schedule.missed,
    createdAt: schedule.createdAt,
    updatedAt: schedule.updatedAt,
    ...(schedule.changedBy ? { changedBy: { ...schedule.changedBy } } : {}),
  };
}

/** The trigger part of a request, validated: what {@link resolveTrigger} returns. */
export interface Trigger {
  cron?: string;
  rate?: string;
  expression: string;
  timezone: string;
  startAt?: string;
  endAt?: string;
  anchorAt?: number;
}

const RATE_INPUT = /^(?:rate\(\s*)?(\d+)\s+(minute|minutes|hour|hours|day|days)(?:\s*\))?$/;

function fail(path: string, message: string): never {
  throw new ValidationError(`invalid schedule: ${path} ${message}`, [{ path, message }]);
}

/** `5 minutes` / `rate(5 minutes)` / `1 minutes` → `rate(5 minutes)` / `rate(1 minute)`. */
export function normalizeRate(input: string): string {
  const m = RATE_INPUT.exec(input.trim());
  if (!m?.[1] || !m[2]) fail('rate', 'must be "<n> minutes|hours|days" or "rate(<n> <unit>)", e.g. "5 minutes"');
  const value = Number(m[1]);
  if (!Number.isSafeInteger(value) || value < 1) fail('rate', 'must be at least 1 (a rate of 0 never fires)');
  const unit = m[2].replace(/s$/, '');
  return `rate(${value} ${unit}${value === 1 ? '' : 's'})`;
}

/** Parses `expression`, reporting a problem on `path`. */
function parseOn(path: 'cron' | 'rate', expression: string): ParsedExpression {
  try {
    const parsed = parseScheduleExpression(expression);
    if (parsed.kind === 'at') fail(path, 'must be a recurring expression, not at(...)');
    return parsed;
  } catch (error) {
    if (error instanceof ScheduleExpressionError) fail(path, error.message);
    throw error;
  }
}

/** Five-field Unix cron, a macro, or `cron(...)` → the AWS six-field expression. */
export function normalizeCron(input: string): string {
  const text = input.trim();
  if (/^cron\(/i.test(text)) {
    parseOn('cron', text);
    return text;
  }
  try {
    return translateCron5(text);
  } catch (error) {
    if (error instanceof ScheduleExpressionError) fail('cron', error.message);
    throw error;
  }
}

/** The trigger fields of a schedule request (`POST /schedules`, ./request.ts), as given. */
export interface TriggerFields {
  cron?: string | undefined;
  rate?: string | undefined;
  timezone?: string | undefined;
  startAt?: string | undefined;
  endAt?: string | undefined;
}

/**
 * Validates the trigger fields of a request (exactly one of `cron`/`rate`, the time zone, the
 * window) and checks that the schedule fires at least once after `now`. Throws a
 * {@link ValidationError} naming the field; nothing is written before this passes.
 */
export function resolveTrigger(request: TriggerFields, now: number): Trigger {
  const issues: FieldIssue[] = [];
  if (request.cron === undefined && request.rate === undefined) {
    issues.push({ path: 'cron', message: 'give exactly one of cron or rate' });
  }
  if (request.cron !== undefined && request.rate !== undefined) {
    issues.push({ path: 'rate', message: 'give exactly one of cron or rate, not both' });
  }
  if (issues.length > 0) throw new ValidationError('invalid schedule: give exactly one of cron or rate', issues);

  const timezone = request.timezone ?? 'UTC';
  if (!isValidTimeZone(timezone)) {
    fail('timezone', `"${timezone}" is not an IANA time zone (e.g. UTC, Europe/Berlin, America/New_York)`);
  }
  const startMs = request.startAt === undefined ? undefined : Date.parse(request.startAt);
  const endMs = request.endAt === undefined ? undefined : Date.parse(request.endAt);
  if (endMs !== undefined && startMs !== undefined && endMs <= startMs) fail('endAt', 'must be later than startAt');
  if (endMs !== undefined && endMs <= now) fail('endAt', 'must be in the future');

  const trigger: Trigger = { expression: '', timezone };
  if (request.cron !== undefined) {
    trigger.cron = request.cron;
    trigger.expression = normalizeCron(request.cron);
  } else if (request.rate !== undefined) {
    trigger.rate = request.rate;
    trigger.expression = normalizeRate(request.rate);
    parseOn('rate', trigger.expression);
    // Whole seconds (Scheduler's StartDate); without startAt, the next whole minute.
    trigger.anchorAt = startMs !== undefined ? Math.ceil(startMs / 1000) * 1000 : Math.ceil(now / 60_000) * 60_000;
  }
  if (request.startAt !== undefined && startMs !== undefined) trigger.startAt = new Date(startMs).toISOString();
  if (request.endAt !== undefined && endMs !== undefined) trigger.endAt = new Date(endMs).toISOString();

  const first = nextFireOf(trigger, now);
  if (first === undefined) {
    fail(trigger.cron !== undefined ? 'cron' : 'rate', 'never fires after now (check the expression and endAt)');
  }
  return trigger;
}

/** Options for `nextFireTime` from a schedule's trigger fields. */
function fireOptions(trigger: Pick<Trigger, 'timezone' | 'startAt' | 'endAt' | 'anchorAt'>): {
  timezone: string;
  startMs?: number;
  endMs?: number;
} {
  const opts: { timezone: string; startMs?: number; endMs?: number } = { timezone: trigger.timezone };
  const start = trigger.anchorAt ?? (trigger.startAt === undefined ? undefined : Date.parse(trigger.startAt));
  if (start !== undefined) opts.startMs = start;
  if (trigger.endAt !== undefined) opts.endMs = Date.parse(trigger.endAt);
  return opts;
}

const parsedCache = new Map<string, ParsedExpression>();

function parsedOf(expression: string): ParsedExpression {
  let parsed = parsedCache.get(expression);
  if (!parsed) {
    parsed = parseScheduleExpression(expression);
    if (parsedCache.size > 1000) parsedCache.clear();
    parsedCache.set(expression, parsed);
  }
  return parsed;
}

/**
 * The schedule's first fire strictly after `afterMs`, or undefined when it never fires again.
 * Daylight-saving rules are `nextFireTime`'s: a cron time skipped by spring-forward does not
 * fire that day, a repeated one fires once.
 */
export function nextFireOf(
  trigger: Pick<Trigger, 'expression' | 'timezone' | 'startAt' | 'endAt' | 'anchorAt'>,
  afterMs: number,
): number | undefined {
  return nextFireTime(parsedOf(trigger.expression), afterMs, fireOptions(trigger));
}

/**
 * Name of a schedule's EventBridge Scheduler schedule, in the platform's schedule group:
 * `_s.<name>`. The leading `_` (never the start of a job id) keeps it apart from one-time job
 * schedules (named by job id) and long-retry schedules (`_r<n>.`); a name too long for the
 * 64-character limit keeps its start and gets an 8-digit hash of the whole name.
 */
export function triggerName(name: string): string {
  const prefix = '_s.';
  if (prefix.length + name.length <= 64) return `${prefix}${name}`;
  const hash = fnv1a(name).toString(16).padStart(8, '0');
  return `${prefix}${name.slice(0, 64 - prefix.length - hash.length - 1)}.${hash}`;
}

/**
 * How long after `now` a schedule being caught up is due again: after this supervisor pass, and
 * by the next one. Half of the rule's one minute, because EventBridge runs the passes about a
 * minute apart, not exactly; with a full minute, a pass that came a little early would miss the
 * schedule, and its overdue slot would slip a minute past the documented bound.
 */
export const CATCH_UP_RETRY_MS = 30_000;

/**
 * Sets `dueAt` for an enabled schedule: its next fire plus the grace Scheduler gets, but never
 * earlier than {@link CATCH_UP_RETRY_MS} from `now` (a schedule being caught up stays in the
 * supervisor's window, for its next pass).
 */
export function withDue(schedule: Schedule, now: number): Schedule {
  const next = { ...schedule };
  delete next.dueAt;
  if (next.state === 'enabled' && next.nextFireAt !== undefined) {
    next.dueAt = Math.max(next.nextFireAt + DUE_GRACE_MS.fire, now + CATCH_UP_RETRY_MS);
  }
  return next;
}

/**
 * When the supervisor should look at a schedule: its `dueAt` (see {@link withDue}), else its next
 * fire plus Scheduler's grace; undefined for a paused or ended schedule. The supervisor reads
 * every schedule each pass, so this needs no index (a fire writes no index entry).
 */
export function scheduleDueAt(schedule: Pick<Schedule, 'state' | 'nextFireAt' | 'dueAt'>): number | undefined {
  if (schedule.state !== 'enabled' || schedule.nextFireAt === undefined) return undefined;
  return schedule.dueAt ?? schedule.nextFireAt + DUE_GRACE_MS.fire;
}

/** The fields that define a schedule (everything a replay of `POST /schedules` must match). */
export function definitionOf(schedule: Schedule): string {
  return JSON.stringify([
    schedule.type,
    schedule.payloadHash,
    schedule.expression,
    schedule.timezone,
    schedule.startAt ?? null,
    schedule.endAt ?? null,
    schedule.maxAttempts,
    schedule.overlap,
    schedule.priority ?? null,
  ]);
}
