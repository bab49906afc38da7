/**
 * Evaluation of AWS cron expressions with the croner library, behind our own EventBridge layer:
 * the second evaluator of the differential test (test/unit/cron-differential.test.ts). Production
 * keeps `shared/core/schedule-expression-cron.ts`, because croner handles daylight-saving changes
 * as Vixie cron does and EventBridge Scheduler does not (docs/schedules-cron.md).
 *
 * `shared/core/schedule-expression.ts` keeps what is EventBridge's own: the grammar and its error
 * messages (`?` in exactly one day field, one `#` only, no steps in day-of-week, years
 * 1970–2199). This module takes an expression that already passed that layer and writes it in
 * croner's syntax:
 *
 * - a seconds field `0` in front and the year last (croner's seven-part mode);
 * - `?` becomes `*`, and day-of-month and day-of-week are combined with AND (`domAndDow`): one of
 *   them is always `*`, so the other one decides, as in AWS;
 * - Quartz weekday numbering (`alternativeWeekdays`: 1 = Sunday … 7 = Saturday, names likewise);
 * - AWS steps `start/step` become `start-max/step` (croner takes only `*` or a range before `/`),
 *   and a step longer than the rest of the range becomes the single start value;
 * - a lone `L` in day-of-week (the last day of the week, Saturday) becomes `7`;
 * - year `*` becomes `1970-2199`, the years EventBridge accepts.
 */
import { Cron } from 'croner';
import type { CronFields } from '../../shared/core/schedule-expression';
import { FIELDS, type FieldDef } from '../../shared/core/schedule-expression-syntax';

/** How many slots croner's parser keeps for each field (it rejects a step longer than that). */
const CRONER_SLOTS: Record<keyof CronFields, number> = {
  minutes: 60,
  hours: 24,
  dayOfMonth: 31,
  month: 12,
  dayOfWeek: 7,
  year: 10_000,
};

/** The number a value stands for: digits, or a name of the field (`JAN`, `MON`). */
function fieldValue(text: string, def: FieldDef): number {
  if (/^\d+$/.test(text)) return Number(text);
  const index = def.names?.indexOf(text.toUpperCase()) ?? -1;
  if (index < 0) throw new RangeError(`"${text}" is not a ${def.name} value`);
  return def.min + index;
}

/** One list item of a plain field (values, ranges, `*`, steps) in croner's syntax. */
function cronerItem(item: string, def: FieldDef, slots: number): string {
  const [range = '', stepText] = item.split('/');
  if (stepText === undefined) return range;
  const step = Number(stepText);
  let from: number;
  let to: number;
  if (range === '*') {
    from = def.min;
    to = def.max;
  } else if (range.includes('-')) {
    const [a = '', b = ''] = range.split('-');
    from = fieldValue(a, def);
    to = fieldValue(b, def);
  } else {
    from = fieldValue(range, def);
    to = def.max;
  }
  if (step > to - from) return `${from}`;
  return `${from}-${to}/${Math.min(step, slots)}`;
}

/** A plain field (minutes, hours, month, year, or the list form of a day field). */
function cronerList(text: string, key: keyof CronFields): string {
  const def: FieldDef = FIELDS[key];
  return text
    .split(',')
    .map((item) => cronerItem(item, def, CRONER_SLOTS[key]))
    .join(',');
}

/**
 * The croner pattern (seven parts: seconds … year) for the fields of a valid AWS cron expression.
 *
 * @example
 * cronerPattern({ minutes: '0/15', hours: '9', dayOfMonth: '?', month: '*', dayOfWeek: 'MON-FRI', year: '*' });
 * // '0 0-59/15 9 * * MON-FRI 1970-2199'
 */
export function cronerPattern(fields: CronFields): string {
  const dom =
    fields.dayOfMonth === '?'
      ? '*'
      : /[LW]/.test(fields.dayOfMonth)
        ? fields.dayOfMonth
        : cronerList(fields.dayOfMonth, 'dayOfMonth');
  let dow: string;
  if (fields.dayOfWeek === '?') dow = '*';
  else if (fields.dayOfWeek === 'L') dow = '7';
  else if (/[L#]/i.test(fields.dayOfWeek)) dow = fields.dayOfWeek;
  else dow = cronerList(fields.dayOfWeek, 'dayOfWeek');
  const year = fields.year === '*' ? `${FIELDS.year.min}-${FIELDS.year.max}` : cronerList(fields.year, 'year');
  return [
    '0',
    cronerList(fields.minutes, 'minutes'),
    cronerList(fields.hours, 'hours'),
    dom,
    cronerList(fields.month, 'month'),
    dow,
    year,
  ].join(' ');
}

const jobs = new Map<string, Cron>();

/** A paused croner job (it never runs anything; it only answers `nextRun`) for the pattern and zone. */
function cronerJob(pattern: string, timezone: string): Cron {
  const key = `${timezone} ${pattern}`;
  let job = jobs.get(key);
  if (!job) {
    job = new Cron(pattern, {
      timezone,
      mode: '7-part',
      alternativeWeekdays: true,
      domAndDow: true,
      paused: true,
    });
    if (jobs.size > 1000) jobs.clear();
    jobs.set(key, job);
  }
  return job;
}

/**
 * First instant strictly after `afterMs` that croner gives for the expression in `timeZone`, or
 * `undefined` when there is none before 2200. Daylight saving time as croner handles it.
 */
export function nextCronInstantCroner(fields: CronFields, afterMs: number, timeZone: string): number | undefined {
  const next = cronerJob(cronerPattern(fields), timeZone).nextRun(new Date(afterMs));
  return next === null ? undefined : next.getTime();
}
