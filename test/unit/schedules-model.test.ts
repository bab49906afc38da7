import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../shared/errors';
import {
  definitionOf,
  nextFireOf,
  normalizeCron,
  normalizeRate,
  resolveTrigger,
  type Schedule,
  type Trigger,
  toScheduleView,
  triggerName,
  withDue,
} from '../../shared/schedules/model';
import { scheduleRequestSchema } from '../../shared/schedules/request';

const NOW = Date.parse('2026-03-01T12:00:20.000Z');
const base = { type: 'echo', payload: { a: 1 } };

function issuesOf(fn: () => unknown): { path: string; message: string }[] {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).issues ?? [];
  }
  throw new Error('expected a ValidationError');
}

/** Fire times of a trigger after `from`, `count` of them, as ISO strings. */
function fires(trigger: Trigger, from: number, count: number): string[] {
  const out: string[] = [];
  let t = from;
  for (let i = 0; i < count; i++) {
    const next = nextFireOf(trigger, t);
    if (next === undefined) break;
    out.push(new Date(next).toISOString());
    t = next;
  }
  return out;
}

describe('scheduleRequestSchema', () => {
  it('accepts a minimal and a full request', () => {
    expect(scheduleRequestSchema.safeParse({ name: 'nightly', ...base, cron: '0 2 * * *' }).success).toBe(true);
    const full = {
      name: 'report.v2_a-b',
      ...base,
      rate: '5 minutes',
      timezone: 'Europe/Berlin',
      startAt: '2026-03-02T00:00:00+01:00',
      endAt: '2026-04-02T00:00:00Z',
      maxAttempts: 5,
      overlap: 'queue-one',
    };
    expect(scheduleRequestSchema.parse(full)).toEqual(full);
  });

  it.each([
    ['a name starting with _', { name: '_x', ...base, cron: '* * * * *' }, 'name'],
    ['a name of 65 characters', { name: 'a'.repeat(65), ...base, cron: '* * * * *' }, 'name'],
    ['an unknown overlap policy', { name: 'x', ...base, cron: '* * * * *', overlap: 'replace' }, 'overlap'],
    ['an endAt without offset', { name: 'x', ...base, cron: '* * * * *', endAt: '2026-03-02T00:00:00' }, 'endAt'],
    ['an unknown field', { name: 'x', ...base, cron: '* * * * *', every: 5 }, 'every'],
    ['maxAttempts 0', { name: 'x', ...base, cron: '* * * * *', maxAttempts: 0 }, 'maxAttempts'],
  ])('rejects %s on its field', (_label, input, path) => {
    const result = scheduleRequestSchema.safeParse(input);
    expect(result.success).toBe(false);
    const paths = result.error?.issues.map((i) => (i.code === 'unrecognized_keys' ? i.keys[0] : i.path.join('.')));
    expect(paths).toContain(path);
  });
});

describe('normalizeRate', () => {
  it.each([
    ['5 minutes', 'rate(5 minutes)'],
    ['rate(5 minutes)', 'rate(5 minutes)'],
    ['1 minutes', 'rate(1 minute)'],
    ['1 hour', 'rate(1 hour)'],
    ['2 day', 'rate(2 days)'],
    [' rate( 3 hours ) ', 'rate(3 hours)'],
  ])('%j → %s', (input, expected) => {
    expect(normalizeRate(input)).toBe(expected);
  });

  it.each(['0 minutes', 'rate(0 minutes)'])('rejects a rate of 0 (%s) on path rate', (input) => {
    expect(issuesOf(() => normalizeRate(input))).toEqual([
      { path: 'rate', message: 'must be at least 1 (a rate of 0 never fires)' },
    ]);
  });

  it.each(['5', 'five minutes', '5 weeks', '-5 minutes', 'cron(* * * * ? *)'])('rejects %j on path rate', (input) => {
    expect(issuesOf(() => normalizeRate(input))[0]?.path).toBe('rate');
  });
});

describe('normalizeCron', () => {
  it('translates five-field Unix cron and macros, and keeps AWS cron(...)', () => {
    expect(normalizeCron('30 9 * * 1-5')).toBe('cron(30 9 ? * 2-6 *)');
    expect(normalizeCron('@daily')).toBe('cron(0 0 * * ? *)');
    expect(normalizeCron('cron(0 10 ? * MON *)')).toBe('cron(0 10 ? * MON *)');
  });

  it.each(['61 * * * *', '* * *', 'cron(0 10 * * * *)', 'every day', '0 0 1 * 1', 'at(2026-01-01T00:00:00)'])(
    'rejects %j on path cron, with the parser message',
    (input) => {
      const issues = issuesOf(() => normalizeCron(input));
      expect(issues).toHaveLength(1);
      expect(issues[0]?.path).toBe('cron');
      expect(issues[0]?.message.length).toBeGreaterThan(10);
    },
  );
});

describe('resolveTrigger', () => {
  it('needs exactly one of cron and rate', () => {
    expect(issuesOf(() => resolveTrigger({ ...base, cron: undefined }, NOW))).toEqual([
      { path: 'cron', message: 'give exactly one of cron or rate' },
    ]);
    expect(issuesOf(() => resolveTrigger({ ...base, cron: '* * * * *', rate: '5 minutes' }, NOW))[0]?.path).toBe(
      'rate',
    );
  });

  it('validates the time zone (default UTC)', () => {
    expect(resolveTrigger({ ...base, cron: '0 2 * * *' }, NOW).timezone).toBe('UTC');
    expect(resolveTrigger({ ...base, cron: '0 2 * * *', timezone: 'Asia/Kolkata' }, NOW).timezone).toBe('Asia/Kolkata');
    expect(issuesOf(() => resolveTrigger({ ...base, cron: '0 2 * * *', timezone: 'Mars/Olympus' }, NOW))[0]?.path).toBe(
      'timezone',
    );
  });

  it('wants endAt after startAt and in the future', () => {
    const cron = { ...base, cron: '0 2 * * *' };
    expect(
      issuesOf(() => resolveTrigger({ ...cron, startAt: '2026-04-01T00:00:00Z', endAt: '2026-03-15T00:00:00Z' }, NOW)),
    ).toEqual([{ path: 'endAt', message: 'must be later than startAt' }]);
    expect(issuesOf(() => resolveTrigger({ ...cron, endAt: '2026-02-01T00:00:00Z' }, NOW))).toEqual([
      { path: 'endAt', message: 'must be in the future' },
    ]);
  });

  it('refuses a schedule that never fires again', () => {
    const issues = issuesOf(() => resolveTrigger({ ...base, cron: '0 0 1 1 *', endAt: '2026-06-01T00:00:00Z' }, NOW));
    expect(issues).toEqual([{ path: 'cron', message: 'never fires after now (check the expression and endAt)' }]);
  });

  it('anchors a rate at the next whole minute, or at startAt (whole seconds)', () => {
    const plain = resolveTrigger({ ...base, rate: '5 minutes' }, NOW);
    expect(plain).toMatchObject({ expression: 'rate(5 minutes)', anchorAt: Date.parse('2026-03-01T12:01:00Z') });
    expect(fires(plain, NOW, 3)).toEqual([
      '2026-03-01T12:01:00.000Z',
      '2026-03-01T12:06:00.000Z',
      '2026-03-01T12:11:00.000Z',
    ]);
    const started = resolveTrigger({ ...base, rate: '1 hour', startAt: '2026-03-01T13:30:00.400+00:00' }, NOW);
    expect(started.anchorAt).toBe(Date.parse('2026-03-01T13:30:01Z'));
    expect(started.startAt).toBe('2026-03-01T13:30:00.400Z');
  });
});

describe('next fires across daylight saving time', () => {
  it('skips a New York wall time that does not exist on spring-forward day', () => {
    const t = resolveTrigger({ ...base, cron: '30 2 * * *', timezone: 'America/New_York' }, NOW);
    expect(fires(t, Date.parse('2026-03-06T12:00:00Z'), 3)).toEqual([
      '2026-03-07T07:30:00.000Z', // 02:30 EST
      '2026-03-09T06:30:00.000Z', // 02:30 EDT; 2026-03-08 02:30 never existed
      '2026-03-10T06:30:00.000Z',
    ]);
  });

  it('fires a repeated New York wall time once, at its first occurrence, on fall-back day', () => {
    const t = resolveTrigger({ ...base, cron: '30 1 * * *', timezone: 'America/New_York' }, NOW);
    expect(fires(t, Date.parse('2026-10-31T12:00:00Z'), 3)).toEqual([
      '2026-11-01T05:30:00.000Z', // 01:30 EDT (first occurrence); 01:30 EST does not fire
      '2026-11-02T06:30:00.000Z',
      '2026-11-03T06:30:00.000Z',
    ]);
  });

  it('keeps hourly Berlin crons on the wall clock through both changes', () => {
    const t = resolveTrigger({ ...base, cron: '0 * * * *', timezone: 'Europe/Berlin' }, NOW);
    // 2026-03-29: 02:00 → 03:00 CEST; the hour 02:xx does not exist.
    expect(fires(t, Date.parse('2026-03-29T00:30:00Z'), 3)).toEqual([
      '2026-03-29T01:00:00.000Z', // 03:00 CEST
      '2026-03-29T02:00:00.000Z',
      '2026-03-29T03:00:00.000Z',
    ]);
    // 2026-10-25: 03:00 CEST → 02:00 CET; the repeated 02:00 fires once.
    expect(fires(t, Date.parse('2026-10-24T23:30:00Z'), 3)).toEqual([
      '2026-10-25T00:00:00.000Z', // 02:00 CEST
      '2026-10-25T02:00:00.000Z', // 03:00 CET (02:00 CET, the repeat, is skipped)
      '2026-10-25T03:00:00.000Z',
    ]);
  });

  it('keeps a rate a fixed duration whatever the time zone does', () => {
    const t = resolveTrigger(
      { ...base, rate: '1 day', timezone: 'America/New_York', startAt: '2026-03-07T12:00:00Z' },
      NOW,
    );
    expect(fires(t, Date.parse('2026-03-07T00:00:00Z'), 3)).toEqual([
      '2026-03-07T12:00:00.000Z',
      '2026-03-08T12:00:00.000Z',
      '2026-03-09T12:00:00.000Z',
    ]);
  });

  it('does not fire at or after endAt', () => {
    const t = resolveTrigger({ ...base, cron: '0 * * * *', endAt: '2026-03-01T14:00:00Z' }, NOW);
    expect(fires(t, NOW, 5)).toEqual(['2026-03-01T13:00:00.000Z']);
  });
});

describe('triggerName', () => {
  it('prefixes _s., never a job id, and stays within 64 characters', () => {
    expect(triggerName('nightly')).toBe('_s.nightly');
    expect(triggerName('a'.repeat(61))).toBe(`_s.${'a'.repeat(61)}`);
    const long = triggerName('b'.repeat(64));
    expect(long).toHaveLength(64);
    expect(long).toMatch(/^_s\.b+\.[0-9a-f]{8}$/);
    expect(triggerName(`${'b'.repeat(63)}c`)).not.toBe(long);
  });
});

describe('schedule items', () => {
  const schedule: Schedule = {
    name: 'nightly',
    type: 'echo',
    cron: '0 2 * * *',
    expression: 'cron(0 2 * * ? *)',
    timezone: 'UTC',
    maxAttempts: 3,
    overlap: 'skip',
    state: 'enabled',
    payloadHash: 'h',
    createdAt: '2026-03-01T00:00:00.000Z',
    updatedAt: '2026-03-01T00:00:00.000Z',
    version: 3,
    nextFireAt: Date.parse('2026-03-02T02:00:00Z'),
    skipped: 2,
    lastSkippedAt: Date.parse('2026-03-01T02:00:00Z'),
    missed: 0,
  };

  it('are due two minutes after the next fire, or half a minute from now while catching up', () => {
    expect(withDue(schedule, NOW).dueAt).toBe(Date.parse('2026-03-02T02:02:00Z'));
    const behind = { ...schedule, nextFireAt: NOW - 3600_000 };
    expect(withDue(behind, NOW).dueAt).toBe(NOW + 30_000);
    expect(withDue({ ...schedule, state: 'paused' }, NOW).dueAt).toBeUndefined();
  });

  it('while catching up, are due again by the next pass of a one-minute rule, even one that comes a little early', () => {
    // EventBridge's rate(1 minute) runs passes about a minute apart, not exactly: a schedule the
    // pass at NOW looked at must not slip past the pass after it (the bound of one rule interval).
    const behind = { ...schedule, nextFireAt: NOW - 3600_000 };
    const nextPass = NOW + 59_000;
    expect(withDue(behind, NOW).dueAt).toBeGreaterThan(NOW);
    expect(withDue(behind, NOW).dueAt).toBeLessThanOrEqual(nextPass);
  });

  it('compare by definition, not by firing state', () => {
    expect(definitionOf({ ...schedule, version: 9, skipped: 7 })).toBe(definitionOf(schedule));
    expect(definitionOf({ ...schedule, overlap: 'allow' })).not.toBe(definitionOf(schedule));
  });

  it('show ISO times and the skip counter', () => {
    const view = toScheduleView(schedule, { a: 1 });
    expect(view).toMatchObject({
      name: 'nightly',
      payload: { a: 1 },
      cron: '0 2 * * *',
      rate: null,
      nextFireAt: '2026-03-02T02:00:00.000Z',
      lastFireAt: null,
      skipped: { count: 2, lastAt: '2026-03-01T02:00:00.000Z' },
    });
    expect(toScheduleView(schedule)).not.toHaveProperty('payload');
  });
});
