/**
 * The grammar of schedule expressions and of Unix cron, used by `schedule-expression.ts`, which
 * owns the public API and turns {@link ExpressionSyntaxError} into `ScheduleExpressionError`.
 * Import from `schedule-expression.ts`, not from here.
 */

import type { CronSpec, DayOfMonthRule, DayOfWeekRule } from './schedule-expression-cron';
import type { CronFields, ParsedExpression, RateUnit } from './schedule-expression-types';

/** Internal parse failure; the public functions rethrow it as `ScheduleExpressionError`. */
export class ExpressionSyntaxError extends Error {
  constructor(
    message: string,
    readonly field: string,
    readonly expression: string,
  ) {
    super(message);
    this.name = 'ExpressionSyntaxError';
  }
}

const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
export const WEEKDAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const MIN_YEAR = 1970;
const MAX_YEAR = 2199;
const UNIT_MS: Record<RateUnit, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

export interface FieldDef {
  /** Name used in messages and `ScheduleExpressionError.field`. */
  name: string;
  min: number;
  max: number;
  /** Names accepted in place of numbers, mapped to `min + index`. */
  names?: readonly string[];
  /** Whether `/` steps are allowed. */
  steps: boolean;
}

export const FIELDS = {
  minutes: { name: 'minutes', min: 0, max: 59, steps: true },
  hours: { name: 'hours', min: 0, max: 23, steps: true },
  dayOfMonth: { name: 'day-of-month', min: 1, max: 31, steps: true },
  month: { name: 'month', min: 1, max: 12, names: MONTH_NAMES, steps: true },
  dayOfWeek: { name: 'day-of-week', min: 1, max: 7, names: WEEKDAY_NAMES, steps: false },
  year: { name: 'year', min: MIN_YEAR, max: MAX_YEAR, steps: true },
} satisfies Record<keyof CronFields, FieldDef>;

/** Context for error messages while parsing one expression. */
export class Reporter {
  constructor(
    readonly expression: string,
    readonly label = 'schedule expression',
  ) {}

  fail(field: string, problem: string, fix: string): never {
    throw new ExpressionSyntaxError(
      `Invalid ${this.label} "${this.expression}": ${problem}. ${fix}`,
      field,
      this.expression,
    );
  }
}

function parseValue(text: string, def: FieldDef, r: Reporter): number {
  let value: number;
  if (/^\d+$/.test(text)) {
    value = Number(text);
  } else {
    const index = def.names?.indexOf(text.toUpperCase()) ?? -1;
    if (index < 0) {
      const allowed = def.names
        ? `${def.min}-${def.max} or ${def.names[0]}-${def.names.at(-1)}`
        : `${def.min}-${def.max}`;
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
export function parseList(text: string, def: FieldDef, r: Reporter): number[] {
  if (text.length === 0) r.fail(def.name, `the ${def.name} field is empty`, 'Give a value, a list, a range or *.');
  const values = new Set<number>();
  for (const item of text.split(',')) {
    if (item.length === 0)
      r.fail(def.name, `the ${def.name} field "${text}" has an empty list item`, 'Remove the extra comma.');
    const [range, stepText, extra] = item.split('/');
    if (extra !== undefined || range === undefined || range.length === 0) {
      r.fail(
        def.name,
        `"${item}" in the ${def.name} field is malformed`,
        'Write a step as start/step, for example 0/15.',
      );
    }
    let step = 1;
    if (stepText !== undefined) {
      if (!def.steps) {
        r.fail(
          def.name,
          `steps ("/") are not allowed in the ${def.name} field`,
          'List the values instead, for example 2,4,6.',
        );
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
      if (more !== undefined || !a || !b)
        r.fail(def.name, `"${range}" is not a valid range`, 'Write a range as start-end, for example 1-5.');
      from = parseValue(a, def, r);
      to = parseValue(b, def, r);
      if (from > to) {
        r.fail(
          def.name,
          `the range "${range}" in the ${def.name} field runs backwards`,
          `Split it into two ranges ending at ${def.max} and starting at ${def.min}.`,
        );
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
    r.fail(
      name,
      `"${text}" uses L or W in an unsupported way`,
      'Use L (last day), LW (last weekday) or nW (weekday nearest day n) as the whole field.',
    );
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
      r.fail(
        name,
        `"${text}" is not a valid # expression`,
        'Use a single weekday#n as the whole field, for example 2#1 for the first Monday; AWS allows only one # expression.',
      );
    }
    const nth = Number(m[2]);
    if (nth < 1 || nth > 5)
      r.fail(name, `"${text}" asks for occurrence ${nth} of a weekday`, 'Use an occurrence from 1 to 5.');
    return { kind: 'nth', weekday: parseValue(m[1], FIELDS.dayOfWeek, r), nth };
  }
  const last = /^(.+)L$/.exec(text);
  if (last?.[1] !== undefined && !last[1].includes(',')) {
    return { kind: 'last', weekday: parseValue(last[1], FIELDS.dayOfWeek, r) };
  }
  if (/L/i.test(text)) {
    r.fail(
      name,
      `"${text}" uses L in an unsupported way`,
      'Use L alone (Saturday) or nL as the whole field, for example 6L for the last Friday.',
    );
  }
  return { kind: 'days', days: parseList(text, FIELDS.dayOfWeek, r) };
}

function parseCron(expression: string, inner: string, r: Reporter): ParsedExpression {
  const parts = inner
    .trim()
    .split(/\s+/)
    .filter((p) => p.length > 0);
  if (parts.length !== 6) {
    r.fail(
      'expression',
      `a cron expression needs 6 fields (minutes hours day-of-month month day-of-week year), got ${parts.length}`,
      parts.length === 5
        ? 'Add the year field (usually *) and use ? for day-of-month or day-of-week; translateCron5() converts Unix cron.'
        : 'For example cron(0 10 * * ? *) runs at 10:00 every day.',
    );
  }
  const [minutes, hours, dayOfMonth, month, dayOfWeek, year] = parts as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  const fields: CronFields = { minutes, hours, dayOfMonth, month, dayOfWeek, year };
  for (const [key, text] of [
    ['minutes', minutes],
    ['hours', hours],
    ['month', month],
    ['year', year],
  ] as const) {
    if (text.includes('?'))
      r.fail(
        FIELDS[key].name,
        `? is only allowed in day-of-month and day-of-week, not in ${FIELDS[key].name}`,
        'Use * for "every".',
      );
  }
  if (dayOfMonth === '?' && dayOfWeek === '?') {
    r.fail(
      'day-of-week',
      'day-of-month and day-of-week are both ?',
      'Set one of them to a value or * and keep ? in the other, for example cron(0 10 * * ? *).',
    );
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
  if (!m?.[1] || !m[2])
    r.fail('rate', 'a rate expression is "rate(value unit)"', 'For example rate(5 minutes) or rate(1 hour).');
  const [valueText, unitText] = [m[1], m[2]];
  if (!/^\d+$/.test(valueText) || Number(valueText) < 1) {
    r.fail(
      'rate',
      `the rate value "${valueText}" is not a positive whole number`,
      'Use a whole number of at least 1, for example rate(5 minutes).',
    );
  }
  const value = Number(valueText);
  const unit = /^(minute|hour|day)s?$/.exec(unitText)?.[1] as RateUnit | undefined;
  if (!unit)
    r.fail('rate', `"${unitText}" is not a rate unit`, 'Use minute, minutes, hour, hours, day or days (lower case).');
  const plural = unitText.endsWith('s');
  if (value === 1 && plural)
    r.fail('rate', `a value of 1 needs the singular unit, not "${unitText}"`, `Write rate(1 ${unit}).`);
  if (value !== 1 && !plural)
    r.fail('rate', `a value of ${value} needs the plural unit, not "${unitText}"`, `Write rate(${value} ${unit}s).`);
  const periodMs = value * UNIT_MS[unit];
  if (!Number.isSafeInteger(periodMs)) r.fail('rate', `rate(${value} ${unitText}) is too long`, 'Use a smaller value.');
  return { kind: 'rate', expression, value, unit, periodMs };
}

function parseAt(expression: string, inner: string, r: Reporter): ParsedExpression {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})$/.exec(inner);
  if (!m) {
    r.fail(
      'at',
      `"${inner}" is not in the form yyyy-mm-ddThh:mm:ss`,
      'Give a wall-clock time without zone or fraction, for example at(2026-03-01T09:30:00); set the zone with ScheduleExpressionTimezone.',
    );
  }
  const [year, month, day, hour, minute, second] = m.slice(1).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (year < MIN_YEAR || year > MAX_YEAR)
    r.fail('at', `year ${year} is out of range`, `Use a year from ${MIN_YEAR} to ${MAX_YEAR}.`);
  if (month < 1 || month > 12) r.fail('at', `month ${month} does not exist`, 'Use a month from 01 to 12.');
  const lastDay = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day < 1 || day > lastDay)
    r.fail(
      'at',
      `day ${day} does not exist in ${year}-${String(month).padStart(2, '0')}`,
      `Use a day from 01 to ${lastDay}.`,
    );
  if (hour > 23 || minute > 59 || second > 59)
    r.fail('at', `time ${inner.slice(11)} does not exist`, 'Use hours 00-23, minutes and seconds 00-59.');
  return { kind: 'at', expression, wallTime: { year, month, day, hour, minute, second } };
}

/** Parses an expression; see `parseScheduleExpression`. */
export function parseExpressionText(expr: string): ParsedExpression {
  if (typeof expr !== 'string') {
    throw new ExpressionSyntaxError(
      'A schedule expression must be a string such as rate(5 minutes).',
      'expression',
      String(expr),
    );
  }
  const r: Reporter = new Reporter(expr);
  if (expr.length === 0 || expr.length > 256)
    r.fail('expression', `the expression is ${expr.length} characters long`, 'Use 1 to 256 characters.');
  if (expr.trim() !== expr)
    r.fail('expression', 'it has leading or trailing whitespace', 'Remove the surrounding spaces.');
  const m = /^([A-Za-z]+)\((.*)\)$/s.exec(expr);
  if (!m?.[1] || m[2] === undefined) {
    r.fail(
      'expression',
      'it is not of the form at(...), rate(...) or cron(...)',
      'For example at(2026-03-01T09:30:00), rate(5 minutes) or cron(0 10 * * ? *).',
    );
  }
  switch (m[1]) {
    case 'at':
      return parseAt(expr, m[2], r);
    case 'rate':
      return parseRate(expr, m[2], r);
    case 'cron':
      return parseCron(expr, m[2], r);
    default:
      return r.fail(
        'expression',
        `"${m[1]}" is not an expression type`,
        'Use at(...), rate(...) or cron(...) in lower case.',
      );
  }
}
