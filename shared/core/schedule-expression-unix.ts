/**
 * Translation of standard Unix cron into the AWS six-field form, used by `schedule-expression.ts`
 * (`translateCron5`). Import from `schedule-expression.ts`, not from here.
 */
import {
  FIELDS,
  type FieldDef,
  parseExpressionText,
  parseList,
  Reporter,
  WEEKDAY_NAMES,
} from './schedule-expression-syntax';

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

/** Translates Unix cron; see `translateCron5`. */
export function translateUnixCron(expr: string): string {
  const r: Reporter = new Reporter(expr, 'Unix cron expression');
  const trimmed = typeof expr === 'string' ? expr.trim() : '';
  const source = UNIX_MACROS[trimmed.toLowerCase()] ?? trimmed;
  if (source.startsWith('@'))
    r.fail(
      'expression',
      `"${trimmed}" is not a supported macro`,
      'Use @yearly, @monthly, @weekly, @daily or @hourly, or five fields.',
    );
  if (/^[a-z]+\(/i.test(source))
    r.fail(
      'expression',
      'it is already an AWS-style expression',
      'Pass the five Unix fields only, for example "30 9 * * 1-5".',
    );
  const parts = source.split(/\s+/).filter((p) => p.length > 0);
  if (parts.length !== 5) {
    r.fail(
      'expression',
      `Unix cron has 5 fields (minute hour day-of-month month day-of-week), got ${parts.length}`,
      parts.length === 6
        ? 'Six fields look like AWS cron already: wrap them in cron(...) instead.'
        : 'For example "30 9 * * 1-5".',
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
    if (bad)
      r.fail(
        def.name,
        `the ${def.name} field "${text}" uses "${bad[0]}", which Unix cron does not have`,
        'Use numbers, names, *, lists (,), ranges (-) and steps (/).',
      );
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
  parseExpressionText(result); // the translation must itself be valid
  return result;
}
