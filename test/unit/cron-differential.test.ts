/**
 * Differential test of our cron evaluator (`nextFireTime`, production) against croner 11 behind
 * a thin EventBridge adapter (test/support/schedule-expression-croner.ts). Findings and the
 * decision to keep our evaluator: docs/schedules-cron.md.
 *
 * The two agree on every generated case except where croner fires a slot that EventBridge
 * Scheduler documents it does not (a time in a spring-forward gap, the repeat of a time that
 * occurs twice): those fires are set apart by class and counted, and must occur only under
 * croner's documented condition for them. Anything else that differs fails the test.
 */
import { describe, expect, it } from 'vitest';
import { parseScheduleExpression } from '../../shared/core/schedule-expression';
import { type CronCase, cronCases, ZONES } from '../support/cron-cases';
import {
  classify,
  compareCase,
  croner,
  type DifferenceClass,
  describeMismatch,
  type NextFire,
  ours,
} from '../support/cron-differential';
import { cronerPattern } from '../support/schedule-expression-croner';

const SEED = 20_261_123;
const EXPRESSIONS = 10_000;
const FIRES = 5;

const t = (iso: string): number => Date.parse(iso);
const iso = (ms: number | undefined): string | undefined => (ms === undefined ? undefined : new Date(ms).toISOString());

function cronOf(expression: string) {
  const parsed = parseScheduleExpression(expression);
  if (parsed.kind !== 'cron') throw new Error(`not a cron expression: ${expression}`);
  return parsed;
}

describe('cron evaluators: ours and croner 11', () => {
  it(`agree on the next ${FIRES} fires of ${EXPRESSIONS.toLocaleString('en')} generated expressions, apart from croner's two DST classes`, {
    timeout: 120_000,
  }, () => {
    const cases = cronCases(SEED, EXPRESSIONS, 1);
    expect(cases).toHaveLength(EXPRESSIONS);
    const mismatches: string[] = [];
    const explained: Record<DifferenceClass, number> = { 'gap-end': 0, repeat: 0 };
    const zonesWithDifferences = new Set<string>();
    let fires = 0;
    let agreeingAsIs = 0;
    for (const c of cases) {
      const result = compareCase(c, FIRES);
      fires += result.ours.length;
      if (!result.agree) mismatches.push(describeMismatch(c, result));
      if (result.explained.length === 0) agreeingAsIs++;
      for (const e of result.explained) {
        explained[e.kind]++;
        zonesWithDifferences.add(c.timezone);
      }
    }
    expect({ count: mismatches.length, first: mismatches.slice(0, 10) }).toEqual({ count: 0, first: [] });
    expect(fires).toBeGreaterThan(EXPRESSIONS * 4);
    // Both classes are reached by this sample (the start instants sit at DST changes) ...
    expect(explained['gap-end']).toBeGreaterThan(0);
    expect(explained.repeat).toBeGreaterThan(0);
    // ... they stay rare (about 1 % of the cases here) ...
    expect(agreeingAsIs).toBeGreaterThan(EXPRESSIONS * 0.97);
    // ... and never show in a zone without offset changes.
    expect(zonesWithDifferences.has('UTC')).toBe(false);
    expect(zonesWithDifferences.has('Asia/Kolkata')).toBe(false);
    // Every zone of the list was exercised.
    expect(new Set(cases.map((c) => c.timezone))).toEqual(new Set(ZONES));
  });

  describe('the known differences, each against EventBridge documented behaviour', () => {
    // EventBridge Scheduler documents that a cron time which does not exist on a spring-forward
    // day is skipped, and that on a fall-back day the schedule runs once, not again on the repeat.
    it.each([
      // 02:30 does not exist in New York on 2026-03-08: croner fires when the clocks jump (03:00 EDT).
      [
        'gap-end',
        'cron(30 2 * * ? *)',
        'America/New_York',
        '2026-03-07T12:00:00Z',
        '2026-03-09T06:30:00.000Z',
        '2026-03-08T07:00:00.000Z',
      ],
      // Lord Howe moves 02:00 → 02:30 on 2026-10-04: a half-hour gap, croner fires at 02:30 LHDT.
      [
        'gap-end',
        'cron(15 2 * * ? *)',
        'Australia/Lord_Howe',
        '2026-10-03T12:00:00Z',
        '2026-10-04T15:15:00.000Z',
        '2026-10-03T15:30:00.000Z',
      ],
      // Santiago skips midnight on 2026-09-06 (00:00 → 01:00): croner fires at 01:00.
      [
        'gap-end',
        'cron(0 0 * * ? *)',
        'America/Santiago',
        '2026-09-05T12:00:00Z',
        '2026-09-07T03:00:00.000Z',
        '2026-09-06T04:00:00.000Z',
      ],
      // New York repeats 01:00–01:59 on 2026-11-01: croner fires 01:00 EST as well as 01:00 EDT.
      [
        'repeat',
        'cron(0 * * * ? *)',
        'America/New_York',
        '2026-11-01T05:30:00Z',
        '2026-11-01T07:00:00.000Z',
        '2026-11-01T06:00:00.000Z',
      ],
      // A list of hours makes an interval job in croner's sense: 01:30 fires twice.
      [
        'repeat',
        'cron(30 1,2 * * ? *)',
        'America/New_York',
        '2026-11-01T05:30:00Z',
        '2026-11-01T07:30:00.000Z',
        '2026-11-01T06:30:00.000Z',
      ],
      // Lord Howe repeats 01:30–01:59 on 2026-04-05: croner fires 01:30 and 01:45 twice.
      [
        'repeat',
        'cron(0/15 * * * ? *)',
        'Australia/Lord_Howe',
        '2026-04-04T14:45:00Z',
        '2026-04-04T15:30:00.000Z',
        '2026-04-04T15:00:00.000Z',
      ],
      // Chatham repeats 02:45–03:44 on 2026-04-05: croner fires 03:00 CHST after 03:00 CHADT.
      [
        'repeat',
        'cron(0 3,4 * * ? *)',
        'Pacific/Chatham',
        '2026-04-04T14:00:00Z',
        '2026-04-04T15:15:00.000Z',
        '2026-04-04T14:15:00.000Z',
      ],
    ] as const)('%s: %s in %s after %s: ours %s, croner %s', (kind, expression, timezone, after, oursAt, cronerAt) => {
      const parsed = cronOf(expression);
      expect(iso(ours(parsed, t(after), timezone))).toBe(oursAt);
      expect(iso(croner(parsed, t(after), timezone))).toBe(cronerAt);
      expect(classify(parsed.spec, t(cronerAt), timezone)).toBe(kind);
      // Past its extra fires (Lord Howe has two: 01:30 and 01:45), croner comes back to ours.
      let next = croner(parsed, t(cronerAt), timezone);
      while (next !== undefined && classify(parsed.spec, next, timezone) === kind)
        next = croner(parsed, next, timezone);
      expect(iso(next)).toBe(oursAt);
    });

    it('croner misses a fall-back of more than 3 hours (only in the past: Antarctica/Vostok, 1994-01-31, +07 → +00)', () => {
      // 17:00–23:59 occurs twice that day. Ours fires 20:30 at its first occurrence (13:30Z);
      // croner fires only the second one, 7 hours later. Not one of the excused classes.
      const parsed = cronOf('cron(30 20 * * ? *)');
      const after = t('1994-01-31T00:00:00Z');
      expect(iso(ours(parsed, after, 'Antarctica/Vostok'))).toBe('1994-01-31T13:30:00.000Z');
      expect(iso(croner(parsed, after, 'Antarctica/Vostok'))).toBe('1994-01-31T20:30:00.000Z');
      expect(classify(parsed.spec, t('1994-01-31T20:30:00Z'), 'Antarctica/Vostok')).toBeUndefined();
    });

    it.each([
      // Fixed-time job in a repeated hour: both fire once, at the first occurrence (01:30 EDT).
      ['cron(30 1 * * ? *)', 'America/New_York', '2026-10-31T12:00:00Z', '2026-11-01T05:30:00.000Z'],
      ['cron(30 1 * * ? *)', 'America/New_York', '2026-11-01T05:30:00Z', '2026-11-02T06:30:00.000Z'],
      // Interval job in a gap: both skip 02:00 (03:00 EDT is next).
      ['cron(0 * * * ? *)', 'America/New_York', '2026-03-08T06:30:00Z', '2026-03-08T07:00:00.000Z'],
      // Calendar rules: L, LW, nW, nL, a lone L (Saturday), #, year steps.
      ['cron(0 12 L 2 ? *)', 'UTC', '2027-03-01T00:00:00Z', '2028-02-29T12:00:00.000Z'],
      ['cron(0 12 LW * ? *)', 'Europe/Berlin', '2026-01-01T00:00:00Z', '2026-01-30T11:00:00.000Z'],
      ['cron(0 12 1W * ? *)', 'UTC', '2026-07-15T00:00:00Z', '2026-08-03T12:00:00.000Z'],
      ['cron(0 12 ? * 6L *)', 'Asia/Kolkata', '2026-01-01T00:00:00Z', '2026-01-30T06:30:00.000Z'],
      ['cron(0 12 ? * L *)', 'UTC', '2026-01-01T00:00:00Z', '2026-01-03T12:00:00.000Z'],
      ['cron(0 12 ? * 3#5 *)', 'UTC', '2026-01-01T00:00:00Z', '2026-03-31T12:00:00.000Z'],
      ['cron(0 0 ? * MON#1 2030/2)', 'UTC', '2026-01-01T00:00:00Z', '2030-01-07T00:00:00.000Z'],
      ['cron(5/100 8 * * ? *)', 'UTC', '2026-01-01T00:00:00Z', '2026-01-01T08:05:00.000Z'],
    ] as const)('agree: %s in %s after %s → %s', (expression, timezone, after, expected) => {
      const parsed = cronOf(expression);
      expect(iso(ours(parsed, t(after), timezone))).toBe(expected);
      expect(iso(croner(parsed, t(after), timezone))).toBe(expected);
    });

    it('both stop at the end of 2199, the last year EventBridge accepts', () => {
      const parsed = cronOf('cron(0 0 1 1 ? *)');
      expect(ours(parsed, Date.UTC(2199, 0, 1), 'UTC')).toBeUndefined();
      expect(croner(parsed, Date.UTC(2199, 0, 1), 'UTC')).toBeUndefined();
    });
  });

  describe('the comparison fails on a real difference', () => {
    const sample: CronCase[] = cronCases(SEED + 1, 200, 1);
    const mismatchesWith = (other: NextFire): number =>
      sample.filter((c) => !compareCase(c, FIRES, { ours, croner: other }).agree).length;

    it('an evaluator a minute late', () => {
      const late: NextFire = (parsed, afterMs, timeZone) => {
        const at = croner(parsed, afterMs, timeZone);
        return at === undefined ? undefined : at + 60_000;
      };
      expect(mismatchesWith(late)).toBeGreaterThan(150);
    });

    it('an evaluator that skips every other fire', () => {
      const skipping: NextFire = (parsed, afterMs, timeZone) => {
        const at = croner(parsed, afterMs, timeZone);
        return at === undefined ? undefined : croner(parsed, at, timeZone);
      };
      expect(mismatchesWith(skipping)).toBeGreaterThan(150);
    });

    it('the classes are excused only under their condition', () => {
      const ny = 'America/New_York';
      // 01:30 EST is the repeat of 01:30 EDT: excused for an interval job only.
      expect(classify(cronOf('cron(0/30 1 * * ? *)').spec, t('2026-11-01T06:30:00Z'), ny)).toBe('repeat');
      expect(classify(cronOf('cron(30 1 * * ? *)').spec, t('2026-11-01T06:30:00Z'), ny)).toBeUndefined();
      // 03:00 EDT, when the clocks jump: excused for a fixed-time job at 02:30 only.
      expect(classify(cronOf('cron(30 2 * * ? *)').spec, t('2026-03-08T07:00:00Z'), ny)).toBe('gap-end');
      expect(classify(cronOf('cron(30 2,3 * * ? *)').spec, t('2026-03-08T07:00:00Z'), ny)).toBeUndefined();
      expect(classify(cronOf('cron(30 4 * * ? *)').spec, t('2026-03-08T07:00:00Z'), ny)).toBeUndefined();
    });
  });

  it('writes AWS fields in croner syntax', () => {
    expect(cronerPattern(cronOf('cron(0/15 9 ? * MON-FRI *)').fields)).toBe('0 0-59/15 9 * * MON-FRI 1970-2199');
    expect(cronerPattern(cronOf('cron(5/100 8 L * ? 2030/2)').fields)).toBe('0 5 8 L * * 2030-2199/2');
    expect(cronerPattern(cronOf('cron(*/20 1-5/2 ? JAN/3 L *)').fields)).toBe('0 0-59/20 1-5/2 * 1-12/3 7 1970-2199');
    expect(cronerPattern(cronOf('cron(0 12 ? * FRIL 2027)').fields)).toBe('0 0 12 * * FRIL 2027');
  });
});
