/**
 * EventBridge Scheduler schedule expressions: parsing, validation and evaluation.
 *
 * Pure domain code (no AWS SDK, no I/O). Supports the three expression kinds of EventBridge
 * Scheduler:
 *
 * - `at(yyyy-mm-ddThh:mm:ss)`: one time, wall-clock time in the schedule's time zone.
 * - `rate(value unit)`: every `value` minutes, hours or days (`rate(1 hour)`, `rate(5 minutes)`).
 * - `cron(minutes hours day-of-month month day-of-week year)`: the AWS six-field dialect.
 *
 * Time zones and daylight saving time (DST), following the EventBridge Scheduler user guide:
 *
 * - cron: fields are read on the wall clock of the time zone. When clocks spring forward, a cron
 *   time that does not exist that day is **skipped** (AWS: "your schedule invocation gets skipped
 *   if the cron expression falls on a non-existent date and time"). When clocks fall back, a wall
 *   time that occurs twice fires **once, at its first occurrence** (AWS: "runs only once and
 *   doesn't repeat its invocation"; AWS does not say which occurrence, we pick the first).
 * - rate: a fixed duration (`1 day` = 24 hours), unaffected by DST.
 * - at: the wall time is resolved in the time zone. AWS documents nothing for an `at()` time
 *   inside a spring-forward gap; rather than never firing, we fire at the first existing instant
 *   after it (the moment clocks jump, e.g. 02:30 on a New York spring-forward day fires at 03:00
 *   EDT). A repeated wall time fires at its first occurrence.
 *
 * @module
 */
import { nextCronInstant } from './schedule-expression-cron';
import { ExpressionSyntaxError, parseExpressionText } from './schedule-expression-syntax';
import { translateUnixCron } from './schedule-expression-unix';
import { isValidTimeZone, resolveWallTimeOrLater } from './schedule-expression-zone';

export type { CronSpec, DayOfMonthRule, DayOfWeekRule } from './schedule-expression-cron';
export type { CronFields, ParsedExpression, RateUnit } from './schedule-expression-types';
export type { WallTime } from './schedule-expression-zone';
export { isValidTimeZone } from './schedule-expression-zone';

import type { ParsedExpression } from './schedule-expression-types';

/**
 * A schedule expression (or time zone) that EventBridge Scheduler would reject. The message
 * names the problem and how to fix it; `field` names the part at fault (`minutes`, `hours`,
 * `day-of-month`, `month`, `day-of-week`, `year`, `rate`, `at`, `timezone` or `expression`).
 */
export class ScheduleExpressionError extends Error {
  readonly field?: string;
  readonly expression?: string;

  constructor(message: string, options: { field?: string; expression?: string } = {}) {
    super(message);
    this.name = 'ScheduleExpressionError';
    if (options.field !== undefined) this.field = options.field;
    if (options.expression !== undefined) this.expression = options.expression;
  }
}

/** Runs a parser, turning its internal syntax errors into {@link ScheduleExpressionError}. */
function publicErrors<T>(parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (err instanceof ExpressionSyntaxError) {
      throw new ScheduleExpressionError(err.message, { field: err.field, expression: err.expression });
    }
    throw err;
  }
}

/**
 * Parses and validates an EventBridge Scheduler expression.
 *
 * @throws {ScheduleExpressionError} with a message naming the problem and the fix.
 * @example
 * parseScheduleExpression('cron(0 9 ? * MON-FRI *)'); // { kind: 'cron', … }
 * parseScheduleExpression('rate(1 minutes)'); // throws: a value of 1 needs the singular unit
 */
export function parseScheduleExpression(expr: string): ParsedExpression {
  return publicErrors(() => parseExpressionText(expr));
}

/** Options of {@link nextFireTime}. */
export interface NextFireOptions {
  /** IANA zone for `at()` and `cron()` (default `UTC`). `rate()` ignores it. */
  timezone?: string;
  /**
   * Schedule StartDate (epoch ms). `rate()` fires at `startMs + k × period` (k ≥ 0); without it
   * `rate()` is anchored at `afterMs`, so callers pass the schedule's StartDate or, like
   * EventBridge, its creation time. `cron()` does not fire before it. `at()` ignores it (AWS
   * ignores StartDate for one-time schedules).
   */
  startMs?: number;
  /** Schedule EndDate (epoch ms, exclusive): no fire at or after it. `at()` ignores it, like AWS. */
  endMs?: number;
}

/**
 * The first fire time strictly after `afterMs` (epoch ms), or `undefined` when there is none
 * (an `at()` time already passed, an EndDate reached, a cron that never matches again before 2200).
 * See the module documentation for daylight-saving behaviour.
 *
 * @throws {ScheduleExpressionError} for an invalid expression or unknown time zone.
 * @example
 * const t = nextFireTime('cron(30 2 * * ? *)', Date.parse('2026-03-07T12:00:00Z'), { timezone: 'America/New_York' });
 * new Date(t!).toISOString(); // '2026-03-09T06:30:00.000Z' — 02:30 does not exist on 2026-03-08
 */
export function nextFireTime(
  expr: ParsedExpression | string,
  afterMs: number,
  opts: NextFireOptions = {},
): number | undefined {
  const parsed = typeof expr === 'string' ? parseScheduleExpression(expr) : expr;
  const timezone = opts.timezone ?? 'UTC';
  if (!isValidTimeZone(timezone)) {
    throw new ScheduleExpressionError(
      `Unknown time zone "${timezone}". Use an IANA zone name such as UTC, Europe/Berlin or America/New_York.`,
      {
        field: 'timezone',
        expression: parsed.expression,
      },
    );
  }
  if (!Number.isFinite(afterMs)) throw new RangeError(`afterMs must be a finite epoch time in ms, got ${afterMs}`);
  const { startMs, endMs } = opts;
  const beforeEnd = (t: number | undefined): number | undefined =>
    t === undefined || (endMs !== undefined && t >= endMs) ? undefined : t;
  switch (parsed.kind) {
    case 'at': {
      const at = resolveWallTimeOrLater(parsed.wallTime, timezone);
      return at > afterMs ? at : undefined;
    }
    case 'rate': {
      const anchor = startMs ?? afterMs;
      if (afterMs < anchor) return beforeEnd(anchor);
      return beforeEnd(anchor + (Math.floor((afterMs - anchor) / parsed.periodMs) + 1) * parsed.periodMs);
    }
    case 'cron': {
      const from = startMs !== undefined ? Math.max(afterMs, startMs - 1) : afterMs;
      return beforeEnd(nextCronInstant(parsed.spec, from, timezone));
    }
  }
}
/**
 * Translates a standard five-field Unix cron expression (`minute hour day-of-month month
 * day-of-week`, day-of-week 0–7 with 0 and 7 = Sunday, names allowed, `@daily`-style macros
 * allowed) into the AWS six-field form: adds year `*`, puts `?` in the unrestricted day field,
 * renumbers weekdays to AWS's 1 = Sunday … 7 = Saturday and rewrites `*` steps as `0/n`.
 *
 * Unix cron runs when *either* a restricted day-of-month or a restricted day-of-week matches;
 * AWS cannot restrict both, so such expressions are rejected (split them into two schedules).
 *
 * @throws {ScheduleExpressionError} when the input is not valid Unix cron or has no AWS equivalent.
 * @example
 * translateCron5('30 9 * * 1-5'); // 'cron(30 9 ? * 2-6 *)'
 * translateCron5('*\/15 * 1 * *'); // 'cron(0/15 * 1 * ? *)'
 */
export function translateCron5(expr: string): string {
  return publicErrors(() => translateUnixCron(expr));
}
