import { describe, expect, it } from 'vitest';
import {
  isValidTimeZone,
  nextFireTime,
  parseScheduleExpression,
  ScheduleExpressionError,
  translateCron5,
} from '../../shared/core/schedule-expression';

const t = (iso: string): number => Date.parse(iso);
const MIN = 60_000;

/** Successive fire times, each strictly after the previous one. */
function fires(expr: string, afterIso: string, count: number, opts: Parameters<typeof nextFireTime>[2] = {}): string[] {
  const out: string[] = [];
  let after = t(afterIso);
  for (let i = 0; i < count; i++) {
    const next = nextFireTime(expr, after, opts);
    if (next === undefined) break;
    out.push(new Date(next).toISOString());
    after = next;
  }
  return out;
}

function parseError(expr: string): ScheduleExpressionError {
  try {
    parseScheduleExpression(expr);
  } catch (err) {
    expect(err).toBeInstanceOf(ScheduleExpressionError);
    return err as ScheduleExpressionError;
  }
  throw new Error(`expected ${expr} to be rejected`);
}

describe('parseScheduleExpression', () => {
  it.each([
    'at(2026-03-01T09:30:00)',
    'rate(1 minute)',
    'rate(5 minutes)',
    'rate(1 hour)',
    'rate(12 hours)',
    'rate(1 day)',
    'rate(7 days)',
    'cron(0 10 * * ? *)',
    'cron(0/15 * * * ? *)',
    'cron(*/5 8-17 ? * MON-FRI *)',
    'cron(15 10 ? * 6L 2026-2030)',
    'cron(0 12 L * ? *)',
    'cron(0 12 LW * ? *)',
    'cron(0 12 15W * ? *)',
    'cron(0 9 ? * 2#1 *)',
    'cron(0 9 ? * MON#1 *)',
    'cron(0 8 1 JAN,JUL ? *)',
    'cron(0 18 ? * L *)',
    'cron(0-15/1 8-8 ? * 2,3,4,5,6,7 *)',
    'cron(1-31/30 1-1 ? * 1,7 *)',
    'cron(0 0 1 1 ? 1970)',
    'cron(0 0 1 1 ? 2199)',
  ])('accepts %s', (expr) => {
    expect(parseScheduleExpression(expr).expression).toBe(expr);
  });

  it('returns the kind and compiled parts', () => {
    expect(parseScheduleExpression('rate(5 minutes)')).toEqual({
      kind: 'rate',
      expression: 'rate(5 minutes)',
      value: 5,
      unit: 'minute',
      periodMs: 5 * MIN,
    });
    expect(parseScheduleExpression('at(2026-03-01T09:30:05)')).toMatchObject({
      kind: 'at',
      wallTime: { year: 2026, month: 3, day: 1, hour: 9, minute: 30, second: 5 },
    });
    const cron = parseScheduleExpression('cron(0/20 9-11 ? JAN-MAR MON,FRI 2026)');
    expect(cron.kind).toBe('cron');
    if (cron.kind !== 'cron') return;
    expect(cron.spec.minutes).toEqual([0, 20, 40]);
    expect(cron.spec.hours).toEqual([9, 10, 11]);
    expect(cron.spec.months).toEqual([1, 2, 3]);
    expect(cron.spec.dayOfWeek).toEqual({ kind: 'days', days: [2, 6] });
    expect(cron.spec.dayOfMonth).toEqual({ kind: 'any' });
    expect(cron.spec.years).toEqual([2026]);
    expect(cron.fields.dayOfWeek).toBe('MON,FRI');
  });

  it.each([
    ['rate(1 minutes)', 'rate', /singular unit.*rate\(1 minute\)/],
    ['rate(5 minute)', 'rate', /plural unit.*rate\(5 minutes\)/],
    ['rate(0 minutes)', 'rate', /positive whole number/],
    ['rate(1.5 hours)', 'rate', /positive whole number/],
    ['rate(2 weeks)', 'rate', /"weeks" is not a rate unit/],
    ['rate(5)', 'rate', /rate\(value unit\)/],
    ['at(2026-02-30T00:00:00)', 'at', /day 30 does not exist in 2026-02/],
    ['at(2026-03-01 09:30:00)', 'at', /yyyy-mm-ddThh:mm:ss/],
    ['at(2026-03-01T09:30:00Z)', 'at', /yyyy-mm-ddThh:mm:ss/],
    ['at(2026-03-01T24:00:00)', 'at', /does not exist/],
    ['at(1969-12-31T23:59:59)', 'at', /year 1969 is out of range/],
    ['cron(0 10 * * ?)', 'expression', /needs 6 fields.*got 5.*translateCron5/],
    ['cron(0 10 * * * *)', 'day-of-week', /both set.*\? in exactly one/],
    ['cron(0 10 ? * ? *)', 'day-of-week', /both \?/],
    ['cron(60 10 * * ? *)', 'minutes', /minutes value 60 is out of range/],
    ['cron(0 24 * * ? *)', 'hours', /hours value 24 is out of range/],
    ['cron(0 10 32 * ? *)', 'day-of-month', /day-of-month value 32 is out of range/],
    ['cron(0 10 * 13 ? *)', 'month', /month value 13 is out of range/],
    ['cron(0 10 * FOO ? *)', 'month', /"FOO" is not a valid month value/],
    ['cron(0 10 ? * 8 *)', 'day-of-week', /day-of-week value 8 is out of range/],
    ['cron(0 10 ? * 0 *)', 'day-of-week', /day-of-week value 0 is out of range.*1 to 7/],
    ['cron(0 10 * * ? 2200)', 'year', /year value 2200 is out of range/],
    ['cron(0 10 * * ? 1969)', 'year', /year value 1969 is out of range/],
    ['cron(0 10 ? * 2#1,3#2 *)', 'day-of-week', /only one # expression/],
    ['cron(0 10 ? * 2#6 *)', 'day-of-week', /occurrence 6/],
    ['cron(0 10 ? * 1/2 *)', 'day-of-week', /steps \("\/"\) are not allowed/],
    ['cron(0 10 1,L * ? *)', 'day-of-month', /L or W/],
    ['cron(0 10 ? * 2,L *)', 'day-of-week', /uses L/],
    ['cron(10-5 10 * * ? *)', 'minutes', /runs backwards/],
    ['cron(0/0 10 * * ? *)', 'minutes', /not a valid step/],
    ['cron(0,,5 10 * * ? *)', 'minutes', /empty list item/],
    ['cron(? 10 * * ? *)', 'minutes', /\? is only allowed in day-of-month and day-of-week/],
    ['every(5 minutes)', 'expression', /"every" is not an expression type/],
    ['Rate(5 minutes)', 'expression', /lower case/],
    [' rate(5 minutes)', 'expression', /whitespace/],
    ['5 minutes', 'expression', /at\(\.\.\.\), rate\(\.\.\.\) or cron\(\.\.\.\)/],
    ['', 'expression', /1 to 256 characters/],
  ])('rejects %s', (expr, field, message) => {
    const err = parseError(expr);
    expect(err.field).toBe(field);
    expect(err.expression).toBe(expr);
    expect(err.message).toContain(`"${expr}"`);
    expect(err.message).toMatch(message);
  });
});

describe('translateCron5', () => {
  it.each([
    ['30 9 * * 1-5', 'cron(30 9 ? * 2-6 *)'],
    ['0 0 * * 0', 'cron(0 0 ? * 1 *)'],
    ['0 0 * * 7', 'cron(0 0 ? * 1 *)'],
    ['0 0 * * 5-7', 'cron(0 0 ? * 1,6-7 *)'],
    ['0 0 * * */2', 'cron(0 0 ? * 1,3,5,7 *)'],
    ['0 12 * jan,feb sun', 'cron(0 12 ? JAN,FEB 1 *)'],
    ['0 9 * * mon-fri', 'cron(0 9 ? * 2-6 *)'],
    ['*/15 * 1 * *', 'cron(0/15 * 1 * ? *)'],
    ['0 */2 */3 */4 *', 'cron(0 0/2 1/3 1/4 ? *)'],
    ['5 4 * * *', 'cron(5 4 * * ? *)'],
    ['0 0 1,15 * *', 'cron(0 0 1,15 * ? *)'],
    ['0 0 * * 0-6', 'cron(0 0 ? * 1-7 *)'],
    ['  0   6 * * *  ', 'cron(0 6 * * ? *)'],
    ['@daily', 'cron(0 0 * * ? *)'],
    ['@hourly', 'cron(0 * * * ? *)'],
    ['@weekly', 'cron(0 0 ? * 1 *)'],
    ['@monthly', 'cron(0 0 1 * ? *)'],
    ['@yearly', 'cron(0 0 1 1 ? *)'],
  ])('%s → %s', (unix, aws) => {
    expect(translateCron5(unix)).toBe(aws);
    expect(parseScheduleExpression(aws).kind).toBe('cron');
  });

  it('keeps the meaning: weekdays 9:30 in Unix numbering fire on the same days', () => {
    // 2026-01-02 is a Friday: after 10:00 that day the next are Monday 5th and Tuesday 6th.
    expect(fires(translateCron5('30 9 * * 1-5'), '2026-01-02T10:00:00Z', 2)).toEqual([
      '2026-01-05T09:30:00.000Z',
      '2026-01-06T09:30:00.000Z',
    ]);
    // Unix 0 and 7 are both Sunday: 2026-01-04 is a Sunday.
    expect(fires(translateCron5('0 8 * * 7'), '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-04T08:00:00.000Z']);
  });

  it.each([
    ['0 0 1 * 1', /restrict only one.*two schedules/],
    ['0 0 */2 * 1-5', /restrict only one/],
    ['0 0 * *', /5 fields.*got 4/],
    ['0 0 * * ? *', /Six fields look like AWS cron already/],
    ['cron(0 0 * * ? *)', /already an AWS-style expression/],
    ['61 * * * *', /minutes value 61 is out of range/],
    ['0 0 * * 8', /day-of-week value 8 is out of range.*0 to 7/],
    ['0 0 L * *', /"L" is not a valid day-of-month value/],
    ['0 0 ? * 1', /uses "\?", which Unix cron does not have/],
    ['@reboot', /not a supported macro/],
  ])('rejects %s', (unix, message) => {
    expect(() => translateCron5(unix)).toThrow(ScheduleExpressionError);
    expect(() => translateCron5(unix)).toThrow(message);
    expect(() => translateCron5(unix)).toThrow(/Unix cron expression/);
  });
});

describe('isValidTimeZone', () => {
  it.each(['UTC', 'Etc/UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Etc/GMT+5'])('accepts %s', (tz) => {
    expect(isValidTimeZone(tz)).toBe(true);
  });
  it.each(['', 'Mars/Olympus', '+01:00', '-05:00', 'Europe/ Berlin', 'x'.repeat(51)])('rejects %j', (tz) => {
    expect(isValidTimeZone(tz)).toBe(false);
  });
  it('nextFireTime throws for an unknown zone, naming it', () => {
    try {
      nextFireTime('rate(1 hour)', 0, { timezone: 'Mars/Olympus' });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ScheduleExpressionError);
      expect((err as ScheduleExpressionError).field).toBe('timezone');
      expect((err as Error).message).toMatch(/Unknown time zone "Mars\/Olympus".*IANA/);
    }
  });
});

describe('nextFireTime: at()', () => {
  it('is wall-clock time in UTC by default', () => {
    expect(nextFireTime('at(2026-03-01T09:30:00)', t('2026-01-01T00:00:00Z'))).toBe(t('2026-03-01T09:30:00Z'));
  });

  it('is wall-clock time in the given zone (winter and summer offsets)', () => {
    const ny = { timezone: 'America/New_York' };
    expect(nextFireTime('at(2026-01-15T09:00:00)', 0, ny)).toBe(t('2026-01-15T14:00:00Z'));
    expect(nextFireTime('at(2026-07-15T09:00:00)', 0, ny)).toBe(t('2026-07-15T13:00:00Z'));
    const berlin = { timezone: 'Europe/Berlin' };
    expect(nextFireTime('at(2026-01-15T09:00:00)', 0, berlin)).toBe(t('2026-01-15T08:00:00Z'));
    expect(nextFireTime('at(2026-07-01T09:00:00)', 0, berlin)).toBe(t('2026-07-01T07:00:00Z'));
  });

  it('fires strictly after afterMs, and never once passed', () => {
    const at = t('2026-03-01T09:30:00Z');
    expect(nextFireTime('at(2026-03-01T09:30:00)', at - 1)).toBe(at);
    expect(nextFireTime('at(2026-03-01T09:30:00)', at)).toBeUndefined();
    expect(nextFireTime('at(2026-03-01T09:30:00)', at + 3_600_000)).toBeUndefined();
  });

  it('ignores StartDate and EndDate, like AWS', () => {
    const opts = { startMs: t('2027-01-01T00:00:00Z'), endMs: t('2026-01-02T00:00:00Z') };
    expect(nextFireTime('at(2026-03-01T09:30:00)', 0, opts)).toBe(t('2026-03-01T09:30:00Z'));
  });

  it('a wall time skipped by spring-forward fires when the clocks jump', () => {
    // New York skips 02:00–02:59 on 2026-03-08 (EST→EDT at 07:00Z); Berlin skips 02:00–02:59 on 2026-03-29 (01:00Z).
    expect(nextFireTime('at(2026-03-08T02:30:00)', 0, { timezone: 'America/New_York' })).toBe(
      t('2026-03-08T07:00:00Z'),
    );
    expect(nextFireTime('at(2026-03-29T02:30:00)', 0, { timezone: 'Europe/Berlin' })).toBe(t('2026-03-29T01:00:00Z'));
  });

  it('a wall time repeated by fall-back fires at its first occurrence', () => {
    // New York repeats 01:00–01:59 on 2026-11-01; Berlin repeats 02:00–02:59 on 2026-10-25.
    expect(nextFireTime('at(2026-11-01T01:30:00)', 0, { timezone: 'America/New_York' })).toBe(
      t('2026-11-01T05:30:00Z'),
    );
    expect(nextFireTime('at(2026-10-25T02:30:00)', 0, { timezone: 'Europe/Berlin' })).toBe(t('2026-10-25T00:30:00Z'));
  });
});

describe('nextFireTime: rate()', () => {
  const start = t('2026-01-01T10:00:00Z');

  it('is anchored at startMs: start, start + period, …', () => {
    const opts = { startMs: start };
    expect(nextFireTime('rate(5 minutes)', start - 3_600_000, opts)).toBe(start);
    expect(nextFireTime('rate(5 minutes)', start, opts)).toBe(start + 5 * MIN);
    expect(nextFireTime('rate(5 minutes)', start + 7 * MIN, opts)).toBe(start + 10 * MIN);
    expect(nextFireTime('rate(5 minutes)', start + 10 * MIN, opts)).toBe(start + 15 * MIN);
    expect(nextFireTime('rate(2 hours)', start + 1, opts)).toBe(start + 2 * 3_600_000);
  });

  it('without startMs is anchored at afterMs (pass the creation time as startMs)', () => {
    expect(nextFireTime('rate(5 minutes)', start + 123)).toBe(start + 123 + 5 * MIN);
  });

  it('stops before endMs (exclusive)', () => {
    const opts = { startMs: start, endMs: start + 10 * MIN };
    expect(nextFireTime('rate(5 minutes)', start, opts)).toBe(start + 5 * MIN);
    expect(nextFireTime('rate(5 minutes)', start + 5 * MIN, opts)).toBeUndefined();
  });

  it('counts days as 24 hours across DST, whatever the zone', () => {
    const before = t('2026-03-07T12:00:00Z');
    expect(nextFireTime('rate(1 day)', before, { startMs: before, timezone: 'America/New_York' })).toBe(
      before + 86_400_000,
    );
  });
});

describe('nextFireTime: cron()', () => {
  it('walks weekdays with names and ranges', () => {
    // 2026-01-02 is a Friday.
    expect(fires('cron(0 9 ? * MON-FRI *)', '2026-01-02T10:00:00Z', 3)).toEqual([
      '2026-01-05T09:00:00.000Z',
      '2026-01-06T09:00:00.000Z',
      '2026-01-07T09:00:00.000Z',
    ]);
  });

  it('handles steps in minutes and hours', () => {
    expect(fires('cron(0/20 8-9 * * ? *)', '2026-01-01T08:30:00Z', 4)).toEqual([
      '2026-01-01T08:40:00.000Z',
      '2026-01-01T09:00:00.000Z',
      '2026-01-01T09:20:00.000Z',
      '2026-01-01T09:40:00.000Z',
    ]);
  });

  it('L in day-of-month is the last day, leap years included', () => {
    expect(fires('cron(0 12 L * ? *)', '2026-01-31T12:00:00Z', 2)).toEqual([
      '2026-02-28T12:00:00.000Z',
      '2026-03-31T12:00:00.000Z',
    ]);
    expect(nextFireTime('cron(0 12 L 2 ? *)', t('2027-03-01T00:00:00Z'))).toBe(t('2028-02-29T12:00:00Z'));
  });

  it('LW is the last weekday, nW the nearest weekday within the month', () => {
    // 2026-01-31 is a Saturday → Friday 30th.
    expect(nextFireTime('cron(0 12 LW * ? *)', t('2026-01-01T00:00:00Z'))).toBe(t('2026-01-30T12:00:00Z'));
    // 2026-02-15 is a Sunday → Monday 16th.
    expect(nextFireTime('cron(0 12 15W * ? *)', t('2026-02-01T00:00:00Z'))).toBe(t('2026-02-16T12:00:00Z'));
    // 2026-08-01 is a Saturday → Monday 3rd (never back into July).
    expect(nextFireTime('cron(0 12 1W * ? *)', t('2026-07-15T00:00:00Z'))).toBe(t('2026-08-03T12:00:00Z'));
    // A weekday is itself: 2026-01-15 is a Thursday.
    expect(nextFireTime('cron(0 12 15W * ? *)', t('2026-01-01T00:00:00Z'))).toBe(t('2026-01-15T12:00:00Z'));
  });

  it('nL is the last such weekday, a lone L is Saturday', () => {
    // Last Friday of January 2026 is the 30th.
    expect(nextFireTime('cron(0 12 ? * 6L *)', t('2026-01-01T00:00:00Z'))).toBe(t('2026-01-30T12:00:00Z'));
    expect(nextFireTime('cron(0 12 ? * FRIL *)', t('2026-01-01T00:00:00Z'))).toBe(t('2026-01-30T12:00:00Z'));
    // First Saturday of 2026 is the 3rd.
    expect(nextFireTime('cron(0 12 ? * L *)', t('2026-01-01T00:00:00Z'))).toBe(t('2026-01-03T12:00:00Z'));
  });

  it('# picks the nth weekday of the month and skips months without it', () => {
    // First Monday: 2026-01-05 has passed, February's is the 2nd.
    expect(nextFireTime('cron(0 12 ? * 2#1 *)', t('2026-01-06T00:00:00Z'))).toBe(t('2026-02-02T12:00:00Z'));
    expect(nextFireTime('cron(0 12 ? * MON#1 *)', t('2026-01-06T00:00:00Z'))).toBe(t('2026-02-02T12:00:00Z'));
    // Fifth Tuesday: January and February 2026 have four; March has the 31st.
    expect(nextFireTime('cron(0 12 ? * 3#5 *)', t('2026-01-01T00:00:00Z'))).toBe(t('2026-03-31T12:00:00Z'));
  });

  it('respects the year field and its 1970–2199 bounds', () => {
    expect(nextFireTime('cron(0 0 1 1 ? 2199)', t('2198-06-01T00:00:00Z'))).toBe(Date.UTC(2199, 0, 1));
    expect(nextFireTime('cron(0 0 1 1 ? 2199)', Date.UTC(2199, 0, 1))).toBeUndefined();
    expect(nextFireTime('cron(0 0 1 1 ? *)', Date.UTC(2199, 0, 1))).toBeUndefined();
    expect(nextFireTime('cron(0 0 1 1 ? 2027-2028)', t('2028-01-01T00:00:00Z'))).toBeUndefined();
    expect(nextFireTime('cron(0 0 ? * 2#1 2030/2)', t('2026-01-01T00:00:00Z'))).toBe(t('2030-01-07T00:00:00Z'));
  });

  it('returns undefined for a date that never exists', () => {
    expect(nextFireTime('cron(0 0 31 2 ? *)', t('2026-01-01T00:00:00Z'))).toBeUndefined();
  });

  it('honours startMs (inclusive) and endMs (exclusive)', () => {
    const opts = { startMs: t('2026-01-01T11:30:00Z'), endMs: t('2026-01-01T14:00:00Z') };
    expect(fires('cron(0 * * * ? *)', '2026-01-01T10:00:00Z', 5, opts)).toEqual([
      '2026-01-01T12:00:00.000Z',
      '2026-01-01T13:00:00.000Z',
    ]);
    expect(nextFireTime('cron(0 * * * ? *)', 0, { startMs: t('2026-01-01T12:00:00Z') })).toBe(
      t('2026-01-01T12:00:00Z'),
    );
  });

  it('is fast: a monthly expression walked over 80 years', () => {
    const started = performance.now();
    const list = fires('cron(0 9 ? * 6L *)', '2026-01-01T00:00:00Z', 1000, { timezone: 'Europe/Berlin' });
    expect(list).toHaveLength(1000);
    expect(list[0]).toBe('2026-01-30T08:00:00.000Z');
    expect(performance.now() - started).toBeLessThan(2000);
  });
});

describe('nextFireTime: cron() across DST', () => {
  const ny = { timezone: 'America/New_York' };
  const berlin = { timezone: 'Europe/Berlin' };

  it('New York spring forward: a skipped 02:30 does not fire that day', () => {
    expect(fires('cron(30 2 * * ? *)', '2026-03-06T12:00:00Z', 3, ny)).toEqual([
      '2026-03-07T07:30:00.000Z', // 02:30 EST
      '2026-03-09T06:30:00.000Z', // 02:30 EDT; 2026-03-08 02:30 does not exist
      '2026-03-10T06:30:00.000Z',
    ]);
    expect(fires('cron(0 * * * ? *)', '2026-03-08T05:30:00Z', 3, ny)).toEqual([
      '2026-03-08T06:00:00.000Z', // 01:00 EST
      '2026-03-08T07:00:00.000Z', // 03:00 EDT (02:00 skipped)
      '2026-03-08T08:00:00.000Z',
    ]);
  });

  it('New York fall back: a repeated 01:30 fires once, at its first occurrence', () => {
    expect(fires('cron(30 1 * * ? *)', '2026-10-31T12:00:00Z', 2, ny)).toEqual([
      '2026-11-01T05:30:00.000Z', // 01:30 EDT
      '2026-11-02T06:30:00.000Z', // next day, 01:30 EST (the repeat at 06:30Z on the 1st is skipped)
    ]);
    // Asking from inside the repeated hour does not fire the repeat either.
    expect(nextFireTime('cron(30 1 * * ? *)', t('2026-11-01T06:10:00Z'), ny)).toBe(t('2026-11-02T06:30:00Z'));
    expect(fires('cron(0 * * * ? *)', '2026-11-01T04:30:00Z', 3, ny)).toEqual([
      '2026-11-01T05:00:00.000Z', // 01:00 EDT
      '2026-11-01T07:00:00.000Z', // 02:00 EST (01:00 EST is a repeat)
      '2026-11-01T08:00:00.000Z',
    ]);
  });

  it('Berlin spring forward: a skipped 02:30 does not fire that day', () => {
    expect(fires('cron(30 2 * * ? *)', '2026-03-28T12:00:00Z', 2, berlin)).toEqual([
      '2026-03-30T00:30:00.000Z', // 02:30 CEST; 2026-03-29 02:30 does not exist
      '2026-03-31T00:30:00.000Z',
    ]);
    expect(fires('cron(0 9 * * ? *)', '2026-03-28T12:00:00Z', 2, berlin)).toEqual([
      '2026-03-29T07:00:00.000Z', // 09:00 CEST on the change day
      '2026-03-30T07:00:00.000Z',
    ]);
  });

  it('Berlin fall back: a repeated 02:30 fires once, at its first occurrence', () => {
    expect(fires('cron(30 2 * * ? *)', '2026-10-24T12:00:00Z', 2, berlin)).toEqual([
      '2026-10-25T00:30:00.000Z', // 02:30 CEST
      '2026-10-26T01:30:00.000Z', // 02:30 CET next day
    ]);
    expect(fires('cron(0 9 * * ? *)', '2026-10-24T12:00:00Z', 2, berlin)).toEqual([
      '2026-10-25T08:00:00.000Z', // 09:00 CET
      '2026-10-26T08:00:00.000Z',
    ]);
  });

  it('rejects an invalid zone even for a valid expression', () => {
    expect(() => nextFireTime('cron(0 9 * * ? *)', 0, { timezone: 'Europe/Atlantis' })).toThrow(/Unknown time zone/);
  });
});
