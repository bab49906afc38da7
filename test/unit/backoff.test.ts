import { describe, expect, it } from 'vitest';
import {
  type Backoff,
  DEFAULT_BACKOFF,
  MAX_BACKOFF_MS,
  retryDelayMs,
  retryPolicySchema,
} from '../../shared/core/backoff';

const exp = (overrides: Partial<Extract<Backoff, { kind: 'exponential' }>> = {}): Backoff => ({
  kind: 'exponential',
  baseMs: 1000,
  factor: 2,
  maxMs: 3_600_000,
  jitter: 'none',
  ...overrides,
});

describe('retryDelayMs: exponential', () => {
  it.each([
    [1, 1000],
    [2, 2000],
    [3, 4000],
    [4, 8000],
    [10, 512_000],
  ])('without jitter, after attempt %i waits %i ms', (attempt, expected) => {
    expect(retryDelayMs(exp(), attempt)).toBe(expected);
  });

  it('caps the delay at maxMs', () => {
    expect(retryDelayMs(exp({ maxMs: 5000 }), 3)).toBe(4000);
    expect(retryDelayMs(exp({ maxMs: 5000 }), 4)).toBe(5000);
    expect(retryDelayMs(exp({ maxMs: 5000 }), 25)).toBe(5000);
  });

  it('stays at maxMs when factor^n overflows to Infinity', () => {
    expect(retryDelayMs(exp({ factor: 10, maxMs: MAX_BACKOFF_MS }), 400)).toBe(MAX_BACKOFF_MS);
  });

  it('with full jitter, scales the cap by the injected random value', () => {
    const full = exp({ jitter: 'full' });
    expect(retryDelayMs(full, 3, () => 0)).toBe(0);
    expect(retryDelayMs(full, 3, () => 0.5)).toBe(2000);
    expect(retryDelayMs(full, 3, () => 0.999)).toBe(3996);
  });

  it('with full jitter, never reaches the cap itself', () => {
    expect(retryDelayMs(exp({ jitter: 'full', maxMs: 5000 }), 10, () => 0.999)).toBe(4995);
    expect(retryDelayMs(exp({ jitter: 'full', baseMs: 3 }), 1, () => 0.999)).toBe(2);
  });

  it('does not call random when jitter is none', () => {
    let calls = 0;
    expect(retryDelayMs(exp(), 2, () => ++calls)).toBe(2000);
    expect(calls).toBe(0);
  });

  it('treats attempt numbers below 1 and fractions as attempt 1 / floored', () => {
    expect(retryDelayMs(exp(), 0)).toBe(1000);
    expect(retryDelayMs(exp(), -3)).toBe(1000);
    expect(retryDelayMs(exp(), 2.9)).toBe(2000);
  });

  it('floors fractional delays from non-integer factors', () => {
    expect(retryDelayMs(exp({ baseMs: 1000, factor: 1.5 }), 3)).toBe(2250);
    expect(retryDelayMs(exp({ baseMs: 1001, factor: 1.5 }), 2)).toBe(1501);
  });
});

describe('retryDelayMs: linear and constant', () => {
  const linear: Backoff = { kind: 'linear', stepMs: 1500, maxMs: 5000 };

  it.each([
    [1, 1500],
    [2, 3000],
    [3, 4500],
    [4, 5000],
    [20, 5000],
  ])('linear after attempt %i waits %i ms', (attempt, expected) => {
    expect(retryDelayMs(linear, attempt, () => 0.5)).toBe(expected);
  });

  it('constant waits the same delay after every attempt, ignoring random', () => {
    const constant: Backoff = { kind: 'constant', delayMs: 5000 };
    expect([1, 2, 3, 25].map((n) => retryDelayMs(constant, n, () => 0))).toEqual([5000, 5000, 5000, 5000]);
  });
});

describe('retryPolicySchema', () => {
  it('defaults to 3 attempts and exponential full-jitter backoff', () => {
    expect(retryPolicySchema.parse({})).toEqual({
      maxAttempts: 3,
      backoff: { kind: 'exponential', baseMs: 1000, factor: 2, maxMs: 3_600_000, jitter: 'full' },
    });
    expect(DEFAULT_BACKOFF).toEqual({ kind: 'exponential', baseMs: 1000, factor: 2, maxMs: 3_600_000, jitter: 'full' });
  });

  it('fills the defaults of a partial exponential backoff', () => {
    expect(retryPolicySchema.parse({ backoff: { kind: 'exponential', baseMs: 200 } }).backoff).toEqual({
      kind: 'exponential',
      baseMs: 200,
      factor: 2,
      maxMs: 3_600_000,
      jitter: 'full',
    });
    expect(retryPolicySchema.parse({ backoff: { kind: 'linear', stepMs: 10 } }).backoff).toEqual({
      kind: 'linear',
      stepMs: 10,
      maxMs: 3_600_000,
    });
  });

  it.each([1, 25])('accepts maxAttempts %i', (maxAttempts) => {
    expect(retryPolicySchema.parse({ maxAttempts }).maxAttempts).toBe(maxAttempts);
  });

  it.each([0, 26, -1, 2.5])('rejects maxAttempts %s', (maxAttempts) => {
    const result = retryPolicySchema.safeParse({ maxAttempts });
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((i) => i.path.join('.'))).toEqual(['maxAttempts']);
  });

  it('accepts a backoff maxMs of exactly 30 days and rejects one ms more', () => {
    expect(retryPolicySchema.safeParse({ backoff: { kind: 'exponential', maxMs: 2_592_000_000 } }).success).toBe(true);
    const over = retryPolicySchema.safeParse({ backoff: { kind: 'exponential', maxMs: 2_592_000_001 } });
    expect(over.success).toBe(false);
    expect(over.error?.issues[0]?.path).toEqual(['backoff', 'maxMs']);
  });

  it.each([
    ['linear stepMs beyond 30 days', { kind: 'linear', stepMs: MAX_BACKOFF_MS + 1 }],
    ['constant delay beyond 30 days', { kind: 'constant', delayMs: MAX_BACKOFF_MS + 1 }],
    ['negative constant delay', { kind: 'constant', delayMs: -1 }],
    ['fractional base', { kind: 'exponential', baseMs: 1.5 }],
    ['factor below 1', { kind: 'exponential', factor: 0.5 }],
    ['factor above 10', { kind: 'exponential', factor: 11 }],
    ['unknown jitter', { kind: 'exponential', jitter: 'equal' }],
    ['unknown kind', { kind: 'fibonacci' }],
    ['unknown field', { kind: 'constant', delayMs: 10, extra: true }],
    ['linear without stepMs', { kind: 'linear' }],
  ])('rejects a backoff with %s', (_label, backoff) => {
    expect(retryPolicySchema.safeParse({ backoff }).success).toBe(false);
  });

  it('words its issues as full zod does (it is built with zod/mini, which sets no locale of its own)', () => {
    const result = retryPolicySchema.safeParse({ maxAttempts: 0, backoff: { kind: 'constant', delayMs: 'soon' } });
    expect(result.error?.issues.map((i) => i.message)).toEqual([
      'Too small: expected number to be >=1',
      'Invalid input: expected number, received string',
    ]);
  });

  it('rejects unknown top-level fields', () => {
    const result = retryPolicySchema.safeParse({ maxAttempts: 2, retries: 5 });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.code).toBe('unrecognized_keys');
  });
});
