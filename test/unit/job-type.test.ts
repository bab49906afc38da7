import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJobType, JOB_TYPE_PATTERN, MAX_TIMEOUT_MS } from '../../shared/core/job-type';
import { ConfigError } from '../../shared/errors';

const payload = z.object({ to: z.string() });

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError, nothing was thrown');
}

describe('defineJobType', () => {
  it('fills the defaults: 30 s timeout, 3 attempts, exponential full-jitter backoff', () => {
    const spec = defineJobType({ type: 'send-email', payload });
    expect(spec).toEqual({
      type: 'send-email',
      payload,
      timeoutMs: 30_000,
      retry: {
        maxAttempts: 3,
        backoff: { kind: 'exponential', baseMs: 1000, factor: 2, maxMs: 3_600_000, jitter: 'full' },
      },
    });
    expect(spec.payload).toBe(payload);
  });

  it('keeps given options and fills the rest of the retry policy', () => {
    const spec = defineJobType({
      type: 'resize-image',
      payload,
      timeoutMs: 1000,
      retry: { maxAttempts: 5, backoff: { kind: 'constant', delayMs: 250 } },
    });
    expect(spec.timeoutMs).toBe(1000);
    expect(spec.retry).toEqual({ maxAttempts: 5, backoff: { kind: 'constant', delayMs: 250 } });
    expect(defineJobType({ type: 'x', payload, retry: { maxAttempts: 1 } }).retry.backoff.kind).toBe('exponential');
  });

  it('returns a frozen spec', () => {
    const spec = defineJobType({ type: 'echo', payload });
    expect(Object.isFrozen(spec)).toBe(true);
  });

  it.each(['a', 'echo', 'send-email-2', `a${'b'.repeat(39)}`])('accepts type name %j', (type) => {
    expect(defineJobType({ type, payload }).type).toBe(type);
  });

  it.each([
    '',
    'Echo',
    '1echo',
    '-echo',
    'send_email',
    'send.email',
    'send email',
    '../echo',
    'é',
    `a${'b'.repeat(40)}`,
  ])('rejects type name %j with a ConfigError naming it', (type) => {
    const error = configError(() => defineJobType({ type, payload }));
    expect(error.code).toBe('config_error');
    expect(error.status).toBe(500);
    expect(error.message).toContain(`job type "${type}" must match`);
    expect(JOB_TYPE_PATTERN.test(type)).toBe(false);
  });

  it.each([1000, 30_000, MAX_TIMEOUT_MS])('accepts timeoutMs %i', (timeoutMs) => {
    expect(defineJobType({ type: 'echo', payload, timeoutMs }).timeoutMs).toBe(timeoutMs);
  });

  it.each([999, 0, -1, MAX_TIMEOUT_MS + 1, 1500.5, Number.NaN, Number.POSITIVE_INFINITY])(
    'rejects timeoutMs %s',
    (timeoutMs) => {
      const error = configError(() => defineJobType({ type: 'echo', payload, timeoutMs }));
      expect(error.message).toBe('job type "echo": timeoutMs must be an integer from 1000 to 840000');
    },
  );

  it('caps the timeout below Lambda’s 900 s', () => {
    expect(MAX_TIMEOUT_MS).toBe(840_000);
  });

  it.each([
    ['maxAttempts 0', { maxAttempts: 0 }],
    ['maxAttempts 26', { maxAttempts: 26 }],
    [
      'backoff maxMs beyond 30 days',
      {
        backoff: {
          kind: 'exponential' as const,
          baseMs: 1000,
          factor: 2,
          maxMs: 2_592_000_001,
          jitter: 'full' as const,
        },
      },
    ],
    ['negative constant delay', { backoff: { kind: 'constant' as const, delayMs: -5 } }],
  ])('rejects a retry policy with %s', (_label, retry) => {
    const error = configError(() => defineJobType({ type: 'echo', payload, retry }));
    expect(error.message).toMatch(/^job type "echo": invalid retry policy: /);
  });

  it('rejects unknown retry fields', () => {
    const retry = { maxAttempts: 2, attempts: 9 } as unknown as { maxAttempts: number };
    expect(configError(() => defineJobType({ type: 'echo', payload, retry })).message).toContain(
      'invalid retry policy',
    );
  });
});
