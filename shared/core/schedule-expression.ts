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
import { type CronSpec, type DayOfMonthRule, type DayOfWeekRule, nextCronInstant } from './schedule-expression-cron';
import { isValidTimeZone, resolveWallTimeOrLater, type WallTime } from './schedule-expression-zone';

export type { CronSpec, DayOfMonthRule, DayOfWeekRule } from './schedule-expression-cron';
export { isValidTimeZone } from './schedule-expression-zone';
export type { WallTime } from './schedule-expression-zone';

/** Unit of a `rate()` expression, singular form. */
export type RateUnit = 'minute' | 'hour' | 'day';

/** Raw text of the six fields of an AWS cron expression. */
export interface CronFields {
  minutes: string;
  hours: string;
  dayOfMonth: string;
  month: string;
  dayOfWeek: string;
  year: string;
}

/** A validated schedule expression. `expression` is the original text. */
export type ParsedExpression =
  | { kind: 'at'; expression: string; wallTime: WallTime }
  | { kind: 'rate'; expression: string; value: number; unit: RateUnit; periodMs: number }
  | { kind: 'cron'; expression: string; fields: CronFields; spec: CronSpec };

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

const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const WEEKDAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const MIN_YEAR = 1970;
const MAX_YEAR = 2199;
const UNIT_MS: Record<RateUnit, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

interface FieldDef {
  /** Name used in messages and `ScheduleExpressionError.field`. */
  name: string;
  min: number;
  max: number;
  /** Names accepted in place of numbers, mapped to `min + index`. */
  names?: readonly string[];
  /** Whether `/` steps are allowed. */
  steps: boolean;
}

const FIELDS = {
  minutes: { name: 'minutes', min: 0, max: 59, steps: true },
  hours: { name: 'hours', min: 0, max: 23, steps: true },
  dayOfMonth: { name: 'day-of-month', min: 1, max: 31, steps: true },
  month: { name: 'month', min: 1, max: 12, names: MONTH_NAMES, steps: true },
  dayOfWeek: { name: 'day-of-week', min: 1, max: 7, names: WEEKDAY_NAMES, steps: false },
  year: { name: 'year', min: MIN_YEAR, max: MAX_YEAR, steps: true },
} satisfies Record<keyof CronFields, FieldDef>;

/** Context for error messages while parsing one expression. */
class Reporter {
  constructor(
    readonly expression: string,
    readonly label = 'schedule expression',
  ) {}

  fail(field: string, problem: string, fix: string): never {
    throw new ScheduleExpressionError(`Invalid ${this.label} "${this.expression}": ${problem}. ${fix}`, {
      field,
      expression: this.expression,
    });
  }
}

function parseValue(text: string, def: FieldDef, r: Reporter): number {
  let value: number;
  if (/^\d+$/.test(text)) {
    value = Number(text);
  } else {
    const index = def.names?.indexOf(text.toUpperCase()) ?? -1;
    if (index < 0) {
      const allowed = def.names ? `${def.min}-${def.max} or ${def.names[0]}-${def.names.at(-1)}` : `${def.min}-${def.max}`;
      r.fail(def.name, `"${text}" is not a valid ${def.name} value`, `Use ${allowed}.`);
    }
    value = def.min + index;
  }
  if (value < def.min || value > def.max) {
    r.fail(def.name, `${def.name} value ${value} is out of range`, `Use a value from ${def.min} to ${def.max}.`);
  }
  return value;
}

/** Parses `*`, lists, ranges, names and steps into sorted unique values. */
function parseList(text: string, def: FieldDef, r: Reporter): number[] {
  if (text.length === 0) r.fail(def.name, `the ${def.name} field is empty`, 'Give a value, a list, a range or *.');
  const values = new Set<number>();
  for (const item of text.split(',')) {
    if (item.length === 0) r.fail(def.name, `the ${def.name} field "${text}" has an empty list item`, 'Remove the extra comma.');
    const [range, stepText, extra] = item.split('/');
    if (extra !== undefined || range === undefined || range.length === 0) {
      r.fail(def.name, `"${item}" in the ${def.name} field is malformed`, 'Write a step as start/step, for example 0/15.');
    }
    let step = 1;
    if (stepText !== undefined) {
      if (!def.steps) {
        r.fail(def.name, `steps ("/") are not allowed in the ${def.name} field`, 'List the values instead, for example 2,4,6.');
      }
      if (!/^\d+$/.test(stepText) || Number(stepText) < 1) {
        r.fail(def.name, `"${stepText}" is not a valid step in "${item}"`, 'A step is a whole number of at least 1.');
      }
      step = Number(stepText);
    }
    let from: number;
    let to: number;
    if (range === '*') {
      from = def.min;
      to = def.max;
    } else if (range.includes('-')) {
      const [a, b, more] = range.split('-');
      if (more !== undefined || !a || !b) r.fail(def.name, `"${range}" is not a valid range`, 'Write a range as start-end, for example 1-5.');
      from = parseValue(a, def, r);
      to = parseValue(b, def, r);
      if (from > to) {
        r.fail(def.name, `the range "${range}" in the ${def.name} field runs backwards`, `Split it into two ranges ending at ${def.max} and starting at ${def.min}.`);
      }
    } else {
      from = parseValue(range, def, r);
      to = stepText === undefined ? from : def.max;
    }
    for (let v = from; v <= to; v += step) values.add(v);
  }
  return [...values].sort((a, b) => a - b);
}

function parseDayOfMonth(text: string, r: Reporter): DayOfMonthRule {
  const name = FIELDS.dayOfMonth.name;
  if (text === '?') return { kind: 'any' };
  if (text === 'L') return { kind: 'last' };
  if (text === 'LW') return { kind: 'lastWeekday' };
  const w = /^(\d+)W$/.exec(text);
  if (w?.[1] !== undefined) return { kind: 'nearestWeekday', day: parseValue(w[1], FIELDS.dayOfMonth, r) };
  if (/[LW]/i.test(text)) {
    r.fail(name, `"${text}" uses L or W in an unsupported way`, 'Use L (last day), LW (last weekday) or nW (weekday nearest day n) as the whole field.');
  }
  return { kind: 'days', days: parseList(text, FIELDS.dayOfMonth, r) };
}

function parseDayOfWeek(text: string, r: Reporter): DayOfWeekRule {
  const name = FIELDS.dayOfWeek.name;
  if (text === '?') return { kind: 'any' };
  if (text === 'L') return { kind: 'days', days: [7] };
  if (text.includes('#')) {
    const m = /^([^#,]+)#(\d+)$/.exec(text);
    if (!m?.[1] || !m[2]) {
      r.fail(name, `"${text}" is not a valid # expression`, 'Use a single weekday#n as the whole field, for example 2#1 for the first Monday; AWS allows only one # expression.');
    }
    const nth = Number(m[2]);
    if (nth < 1 || nth > 5) r.fail(name, `"${text}" asks for occurrence ${nth} of a weekday`, 'Use an occurrence from 1 to 5.');
    return { kind: 'nth', weekday: parseValue(m[1], FIELDS.dayOfWeek, r), nth };
  }
  const last = /^(.+)L$/.exec(text);
  if (last?.[1] !== undefined && !last[1].includes(',')) {
    return { kind: 'last', weekday: parseValue(last[1], FIELDS.dayOfWeek, r) };
  }
  if (/L/i.test(text)) {
    r.fail(name, `"${text}" uses L in an unsupported way`, 'Use L alone (Saturday) or nL as the whole field, for example 6L for the last Friday.');
  }
  return { kind: 'days', days: parseList(text, FIELDS.dayOfWeek, r) };
}

function parseCron(expression: string, inner: string, r: Reporter): ParsedExpression {
  const parts = inner.trim().split(/\s+/).filter((p) => p.length > 0);
  if (parts.length !== 6) {
    r.fail(
      'expression',
      `a cron expression needs 6 fields (minutes hours day-of-month month day-of-week year), got ${parts.length}`,
      parts.length === 5 ? 'Add the year field (usually *) and use ? for day-of-month or day-of-week; translateCron5() converts Unix cron.' : 'For example cron(0 10 * * ? *) runs at 10:00 every day.',
    );
  }
  const [minutes, hours, dayOfMonth, month, dayOfWeek, year] = parts as [string, string, string, string, string, string];
  const fields: CronFields = { minutes, hours, dayOfMonth, month, dayOfWeek, year };
  for (const [key, text] of [['minutes', minutes], ['hours', hours], ['month', month], ['year', year]] as const) {
    if (text.includes('?')) r.fail(FIELDS[key].name, `? is only allowed in day-of-month and day-of-week, not in ${FIELDS[key].name}`, 'Use * for "every".');
  }
  if (dayOfMonth === '?' && dayOfWeek === '?') {
    r.fail('day-of-week', 'day-of-month and day-of-week are both ?', 'Set one of them to a value or * and keep ? in the other, for example cron(0 10 * * ? *).');
  }
  if (dayOfMonth !== '?' && dayOfWeek !== '?') {
    r.fail(
      'day-of-week',
      `day-of-month "${dayOfMonth}" and day-of-week "${dayOfWeek}" are both set`,
      'AWS requires ? in exactly one of them: use ? in day-of-week to run on days of the month, or ? in day-of-month to run on weekdays.',
    );
  }
  const spec: CronSpec = {
    minutes: parseList(minutes, FIELDS.minutes, r),
    hours: parseList(hours, FIELDS.hours, r),
    dayOfMonth: parseDayOfMonth(dayOfMonth, r),
    months: parseList(month, FIELDS.month, r),
    dayOfWeek: parseDayOfWeek(dayOfWeek, r),
    years: parseList(year, FIELDS.year, r),
  };
  return { kind: 'cron', expression, fields, spec };
}

function parseRate(expression: string, inner: string, r: Reporter): ParsedExpression {
  const m = /^\s*(\S+)\s+(\S+)\s*$/.exec(inner);
  if (!m?.[1] || !m[2]) r.fail('rate', 'a rate expression is "rate(value unit)"', 'For example rate(5 minutes) or rate(1 hour).');
  const [valueText, unitText] = [m[1], m[2]];
  if (!/^\d+$/.test(valueText) || Number(valueText) < 1) {
    r.fail('rate', `the rate value "${valueText}" is not a positive whole number`, 'Use a whole number of at least 1, for example rate(5 minutes).');
  }
  const value = Number(valueText);
  const unit = /^(minute|hour|day)s?$/.exec(unitText)?.[1] as RateUnit | undefined;
  if (!unit) r.fail('rate', `"${unitText}" is not a rate unit`, 'Use minute, minutes, hour, hours, day or days (lower case).');
  const plural = unitText.endsWith('s');
  if (value === 1 && plural) r.fail('rate', `a value of 1 needs the singular unit, not "${unitText}"`, `Write rate(1 ${unit}).`);
  if (value !== 1 && !plural) r.fail('rate', `a value of ${value} needs the plural unit, not "${unitText}"`, `Write rate(${value} ${unit}s).`);
  const periodMs = value * UNIT_MS[unit];
  if (!Number.isSafeInteger(periodMs)) r.fail('rate', `rate(${value} ${unitText}) is too long`, 'Use a smaller value.');
  return { kind: 'rate', expression, value, unit, periodMs };
}

function parseAt(expression: string, inner: string, r: Reporter): ParsedExpression {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})$/.exec(inner);
  if (!m) {
    r.fail('at', `"${inner}" is not in the form yyyy-mm-ddThh:mm:ss`, 'Give a wall-clock time without zone or fraction, for example at(2026-03-01T09:30:00); set the zone with ScheduleExpressionTimezone.');
  }
  const [year, month, day, hour, minute, second] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  if (year < MIN_YEAR || year > MAX_YEAR) r.fail('at', `year ${year} is out of range`, `Use a year from ${MIN_YEAR} to ${MAX_YEAR}.`);
  if (month < 1 || month > 12) r.fail('at', `month ${month} does not exist`, 'Use a month from 01 to 12.');
  const lastDay = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day < 1 || day > lastDay) r.fail('at', `day ${day} does not exist in ${year}-${String(month).padStart(2, '0')}`, `Use a day from 01 to ${lastDay}.`);
  if (hour > 23 || minute > 59 || second > 59) r.fail('at', `time ${inner.slice(11)} does not exist`, 'Use hours 00-23, minutes and seconds 00-59.');
  return { kind: 'at', expression, wallTime: { year, month, day, hour, minute, second } };
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
  if (typeof expr !== 'string') {
    throw new ScheduleExpressionError('A schedule expression must be a string such as rate(5 minutes).', { field: 'expression' });
  }
  const r: Reporter = new Reporter(expr);
  if (expr.length === 0 || expr.length > 256) r.fail('expression', `the expression is ${expr.length} characters long`, 'Use 1 to 256 characters.');
  if (expr.trim() !== expr) r.fail('expression', 'it has leading or trailing whitespace', 'Remove the surrounding spaces.');
  const m = /^([A-Za-z]+)\((.*)\)$/s.exec(expr);
  if (!m?.[1] || m[2] === undefined) {
    r.fail('expression', 'it is not of the form at(...), rate(...) or cron(...)', 'For example at(2026-03-01T09:30:00), rate(5 minutes) or cron(0 10 * * ? *).');
  }
  switch (m[1]) {
    case 'at':
      return parseAt(expr, m[2], r);
    case 'rate':
      return parseRate(expr, m[2], r);
    case 'cron':
      return parseCron(expr, m[2], r);
    default:
      return r.fail('expression', `"${m[1]}" is not an expression type`, 'Use at(...), rate(...) or cron(...) in lower case.');
  }
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
export function nextFireTime(expr: ParsedExpression | string, afterMs: number, opts: NextFireOptions = {}): number | undefined {
  const parsed = typeof expr === 'string' ? parseScheduleExpression(expr) : expr;
  const timezone = opts.timezone ?? 'UTC';
  if (!isValidTimeZone(timezone)) {
    throw new ScheduleExpressionError(`Unknown time zone "${timezone}". Use an IANA zone name such as UTC, Europe/Berlin or America/New_York.`, {
      field: 'timezone',
      expression: parsed.expression,
    });
  }
  if (!Number.isFinite(afterMs)) throw new RangeError(`afterMs must be a finite epoch time in ms, got ${afterMs}`);
  const { startMs, endMs } = opts;
  const beforeEnd = (t: number | undefined): number | undefined => (t === undefined || (endMs !== undefined && t >= endMs) ? undefined : t);
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

const UNIX_DAY_OF_WEEK: FieldDef = { name: 'day-of-week', min: 0, max: 7, names: WEEKDAY_NAMES, steps: true };
const UNIX_MACROS: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

/** Copies a Unix field into AWS syntax: `*` steps start at the field minimum, names upper case. */
function awsField(text: string, def: FieldDef): string {
  if (text === '*') return '*';
  return text
    .split(',')
    .map((item) => item.replace(/^\*\//, `${def.min}/`).toUpperCase())
    .join(',');
}

/** Formats AWS weekdays (1–7) as a compact list of ranges, e.g. [2,3,4,5,6] → "2-6". */
function compactWeekdays(days: readonly number[]): string {
  const out: string[] = [];
  let i = 0;
  while (i < days.length) {
    let j = i;
    while (j + 1 < days.length && days[j + 1] === (days[j] ?? 0) + 1) j++;
    out.push(i === j ? `${days[i]}` : `${days[i]}-${days[j]}`);
    i = j + 1;
  }
  return out.join(',');
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
  const r: Reporter = new Reporter(expr, 'Unix cron expression');
  const trimmed = typeof expr === 'string' ? expr.trim() : '';
  const source = UNIX_MACROS[trimmed.toLowerCase()] ?? trimmed;
  if (source.startsWith('@')) r.fail('expression', `"${trimmed}" is not a supported macro`, 'Use @yearly, @monthly, @weekly, @daily or @hourly, or five fields.');
  if (/^[a-z]+\(/i.test(source)) r.fail('expression', 'it is already an AWS-style expression', 'Pass the five Unix fields only, for example "30 9 * * 1-5".');
  const parts = source.split(/\s+/).filter((p) => p.length > 0);
  if (parts.length !== 5) {
    r.fail(
      'expression',
      `Unix cron has 5 fields (minute hour day-of-month month day-of-week), got ${parts.length}`,
      parts.length === 6 ? 'Six fields look like AWS cron already: wrap them in cron(...) instead.' : 'For example "30 9 * * 1-5".',
    );
  }
  const [minute, hour, dom, month, dow] = parts as [string, string, string, string, string];
  const checks: [string, FieldDef][] = [
    [minute, FIELDS.minutes],
    [hour, FIELDS.hours],
    [dom, FIELDS.dayOfMonth],
    [month, FIELDS.month],
    [dow, UNIX_DAY_OF_WEEK],
  ];
  for (const [text, def] of checks) {
    const bad = /[^0-9A-Za-z*,/-]/.exec(text);
    if (bad) r.fail(def.name, `the ${def.name} field "${text}" uses "${bad[0]}", which Unix cron does not have`, 'Use numbers, names, *, lists (,), ranges (-) and steps (/).');
    parseList(text, def, r);
  }
  const weekdays = [...new Set(parseList(dow, UNIX_DAY_OF_WEEK, r).map((d) => (d % 7) + 1))].sort((a, b) => a - b);
  const allDaysOfMonth = dom.startsWith('*') && parseList(dom, FIELDS.dayOfMonth, r).length === 31;
  const allWeekdays = dow.startsWith('*') && weekdays.length === 7;
  let awsDom: string;
  let awsDow: string;
  if (allWeekdays) {
    awsDom = awsField(dom, FIELDS.dayOfMonth);
    awsDow = '?';
  } else if (allDaysOfMonth) {
    awsDom = '?';
    awsDow = compactWeekdays(weekdays);
  } else {
    r.fail(
      'day-of-week',
      `both day-of-month "${dom}" and day-of-week "${dow}" are restricted, and AWS cron can restrict only one of them`,
      'Unix cron runs when either matches; create two schedules, one with each field.',
    );
  }
  const result = `cron(${awsField(minute, FIELDS.minutes)} ${awsField(hour, FIELDS.hours)} ${awsDom} ${awsField(month, FIELDS.month)} ${awsDow} *)`;
  parseScheduleExpression(result); // the translation must itself be valid
  return result;
}
