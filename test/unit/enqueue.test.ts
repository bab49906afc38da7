import { describe, expect, it } from 'vitest';
import {
  enqueueRequestSchema,
  JOB_ID_PATTERN,
  jsonBytes,
  MAX_HORIZON_SECONDS,
  MAX_PAYLOAD_BYTES,
  MAX_REQUEST_BYTES,
  MAX_RESULT_BYTES,
  PAST_TOLERANCE_MS,
  planEnqueue,
  SQS_MAX_DELAY_SECONDS,
} from '../../shared/core/enqueue';
import { planHandOff } from '../../shared/core/hand-off';
import { SCHEDULE_LEAD_MS } from '../../shared/core/scheduling';
import { ValidationError } from '../../shared/errors';

const NOW = Date.parse('2026-03-01T12:00:00.000Z');
const isoAt = (ms: number) => new Date(ms).toISOString();
const base = { type: 'send-email', payload: { to: 'a@example.com' } };

/** A new job's plan, and how the API hands it on (core/hand-off.ts: a new job may be scheduled). */
function planned(request: Parameters<typeof planEnqueue>[0], now = NOW) {
  const plan = planEnqueue(request, now);
  return { ...plan, handOff: planHandOff({ runAt: plan.runAt, now, scheduler: true, scheduleName: 'j1' }) };
}

/** Paths of the issues zod reports for `input`, or undefined when it parses. */
function issuePaths(input: unknown): string[] | undefined {
  const result = enqueueRequestSchema.safeParse(input);
  return result.success ? undefined : result.error.issues.map((i) => i.path.join('.'));
}

describe('limits', () => {
  it('has the documented values', () => {
    expect(MAX_PAYLOAD_BYTES).toBe(262_144);
    expect(MAX_RESULT_BYTES).toBe(65_536);
    expect(MAX_REQUEST_BYTES).toBe(266_240);
    expect(SQS_MAX_DELAY_SECONDS).toBe(900);
    expect(MAX_HORIZON_SECONDS).toBe(31_622_400);
    expect(PAST_TOLERANCE_MS).toBe(5000);
  });

  it('jsonBytes counts UTF-8 bytes of the JSON text', () => {
    expect(jsonBytes({ a: 'é' })).toBe(10);
    expect(jsonBytes('€')).toBe(5);
    expect(jsonBytes(undefined)).toBe(0);
  });
});

describe('enqueueRequestSchema', () => {
  it('accepts a minimal request and a full one, unchanged', () => {
    expect(enqueueRequestSchema.parse(base)).toEqual(base);
    const full = { ...base, id: 'order-42.v1_b', delaySeconds: 60, maxAttempts: 5 };
    expect(enqueueRequestSchema.parse(full)).toEqual(full);
    const at = { ...base, runAt: '2026-03-01T13:00:00+02:00' };
    expect(enqueueRequestSchema.parse(at)).toEqual(at);
  });

  it('rejects unknown fields', () => {
    const result = enqueueRequestSchema.safeParse({ ...base, urgency: 1 });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.code).toBe('unrecognized_keys');
  });

  it.each([
    ['missing type', { payload: {} }, ['type']],
    ['upper-case type', { ...base, type: 'SendEmail' }, ['type']],
    ['missing payload', { type: 'x' }, ['payload']],
    ['array payload', { ...base, payload: [1, 2] }, ['payload']],
    ['null payload', { ...base, payload: null }, ['payload']],
    ['string payload', { ...base, payload: '{}' }, ['payload']],
  ])('rejects %s', (_label, input, paths) => {
    expect(issuePaths(input)).toEqual(paths);
  });

  it.each(['a', 'A1', '0', 'job-1', 'a.b_c-d', 'x'.repeat(64)])('accepts id %j', (id) => {
    expect(issuePaths({ ...base, id })).toBeUndefined();
    expect(JOB_ID_PATTERN.test(id)).toBe(true);
  });

  it.each([
    '',
    '../x',
    './x',
    '.hidden',
    '-flag',
    '_x',
    'a b',
    'a/b',
    '$(rm)',
    'a;rm -rf',
    "a'--",
    'x'.repeat(65),
    'é',
    'a\n',
    'a\u0000',
  ])('rejects id %j', (id) => {
    expect(issuePaths({ ...base, id })).toEqual(['id']);
  });

  it.each([0, 1, 900, 901, MAX_HORIZON_SECONDS])('accepts delaySeconds %i', (delaySeconds) => {
    expect(issuePaths({ ...base, delaySeconds })).toBeUndefined();
  });

  it.each([-1, 1.5, MAX_HORIZON_SECONDS + 1, '10', Number.NaN, Number.POSITIVE_INFINITY])(
    'rejects delaySeconds %s',
    (delaySeconds) => {
      expect(issuePaths({ ...base, delaySeconds })).toEqual(['delaySeconds']);
    },
  );

  it.each(['2026-03-01T12:00:00Z', '2026-03-01T12:00:00.123Z', '2026-03-01T12:00:00-05:30'])(
    'accepts runAt %s',
    (runAt) => {
      expect(issuePaths({ ...base, runAt })).toBeUndefined();
    },
  );

  it.each(['2026-03-01T12:00:00', '2026-03-01', 'tomorrow', '2026-02-30T00:00:00Z', '1772366400000'])(
    'rejects runAt %s',
    (runAt) => {
      expect(issuePaths({ ...base, runAt })).toEqual(['runAt']);
    },
  );

  it('says what a runAt without offset is missing', () => {
    const result = enqueueRequestSchema.safeParse({ ...base, runAt: '2026-03-01T12:00:00' });
    expect(result.error?.issues[0]?.message).toBe('must be an ISO 8601 date-time with a time zone');
  });

  it.each([1, 25])('accepts maxAttempts %i', (maxAttempts) => {
    expect(issuePaths({ ...base, maxAttempts })).toBeUndefined();
  });

  it.each([0, 26, 2.5, -1])('rejects maxAttempts %s', (maxAttempts) => {
    expect(issuePaths({ ...base, maxAttempts })).toEqual(['maxAttempts']);
  });
});

describe('planEnqueue', () => {
  it('runs at once without delay or runAt', () => {
    expect(planned({}, NOW)).toEqual({ runAt: NOW, state: 'queued', handOff: { kind: 'send' } });
    expect(planned({ delaySeconds: 0 }, NOW)).toEqual({ runAt: NOW, state: 'queued', handOff: { kind: 'send' } });
  });

  it('uses an SQS delay up to 900 s inclusive', () => {
    expect(planned({ delaySeconds: 1 }, NOW)).toEqual({
      runAt: NOW + 1000,
      state: 'queued',
      handOff: { kind: 'send', delaySeconds: 1 },
    });
    expect(planned({ delaySeconds: 900 }, NOW)).toEqual({
      runAt: NOW + 900_000,
      state: 'queued',
      handOff: { kind: 'send', delaySeconds: 900 },
    });
  });

  it('uses a schedule from 901 s on, firing SCHEDULE_LEAD_MS (60 s) before runAt', () => {
    expect(planned({ delaySeconds: 901 }, NOW)).toEqual({
      runAt: NOW + 901_000,
      state: 'scheduled',
      handOff: { kind: 'schedule', name: 'j1', fireAt: NOW + 901_000 - SCHEDULE_LEAD_MS, notBefore: NOW + 901_000 },
    });
  });

  it('treats a runAt of exactly 900 s ahead as an SQS delay and 900.001 s as a schedule', () => {
    expect(planned({ runAt: isoAt(NOW + 900_000) }, NOW).handOff).toEqual({
      kind: 'send',
      delaySeconds: 900,
    });
    expect(planned({ runAt: isoAt(NOW + 900_001) }, NOW)).toEqual({
      runAt: NOW + 900_001,
      state: 'scheduled',
      handOff: { kind: 'schedule', name: 'j1', fireAt: NOW + 900_001 - SCHEDULE_LEAD_MS, notBefore: NOW + 900_001 },
    });
  });

  it('rounds a sub-second runAt up to a whole second of SQS delay', () => {
    expect(planned({ runAt: isoAt(NOW + 1) }, NOW)).toEqual({
      runAt: NOW + 1,
      state: 'queued',
      handOff: { kind: 'send', delaySeconds: 1 },
    });
  });

  it('honours the offset of runAt', () => {
    const plan = planned({ runAt: '2026-03-01T14:00:00+02:00' }, NOW);
    expect(plan).toEqual({ runAt: NOW, state: 'queued', handOff: { kind: 'send' } });
  });

  it.each([0, 1, PAST_TOLERANCE_MS])('treats a runAt %i ms in the past as now', (ago) => {
    expect(planned({ runAt: isoAt(NOW - ago) }, NOW)).toEqual({
      runAt: NOW,
      state: 'queued',
      handOff: { kind: 'send' },
    });
  });

  it('rejects a runAt beyond the 5 s tolerance, on path runAt', () => {
    const error = catchError(() => planned({ runAt: isoAt(NOW - PAST_TOLERANCE_MS - 1) }, NOW));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.status).toBe(400);
    expect(error.message).toBe('runAt is in the past');
    expect(error.issues).toEqual([
      { path: 'runAt', message: 'must not be earlier than now (2026-03-01T12:00:00.000Z)' },
    ]);
  });

  it('accepts a runAt exactly 366 days ahead and rejects one ms later', () => {
    const limit = NOW + MAX_HORIZON_SECONDS * 1000;
    expect(planned({ runAt: isoAt(limit) }, NOW).handOff).toEqual({
      kind: 'schedule',
      name: 'j1',
      fireAt: limit - SCHEDULE_LEAD_MS,
      notBefore: limit,
    });
    const error = catchError(() => planned({ runAt: isoAt(limit + 1) }, NOW));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.issues).toEqual([{ path: 'runAt', message: 'must be at most 366 days ahead' }]);
  });

  it('rejects delaySeconds together with runAt', () => {
    const error = catchError(() => planEnqueue({ delaySeconds: 10, runAt: isoAt(NOW + 60_000) }, NOW));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.code).toBe('validation_failed');
    expect(error.issues).toEqual([{ path: 'runAt', message: 'cannot be combined with delaySeconds' }]);
  });
});

function catchError(fn: () => unknown): ValidationError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error('expected a ValidationError, nothing was thrown');
}
