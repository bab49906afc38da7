import { describe, expect, it } from 'vitest';
import {
  type AttemptError,
  appendError,
  canonicalJson,
  describeError,
  ERROR_HISTORY_LIMIT,
  ERROR_MESSAGE_LIMIT,
  ERROR_STACK_LIMIT,
  ERROR_SUMMARY_MESSAGE_LIMIT,
  errorSummary,
  type Job,
  toView,
} from '../../shared/core/job';

const AT = Date.parse('2026-03-01T12:00:00.000Z');

describe('describeError', () => {
  it('keeps attempt, time, reason, name and message of an Error', () => {
    const entry = describeError(new TypeError('bad input'), 2, AT, 'error');
    expect(entry).toMatchObject({
      attempt: 2,
      at: '2026-03-01T12:00:00.000Z',
      reason: 'error',
      name: 'TypeError',
      message: 'bad input',
    });
    expect(entry.stack).toMatch(/^TypeError: bad input\n/);
  });

  it('truncates the message to 500 characters, ending with an ellipsis', () => {
    const entry = describeError(new Error('m'.repeat(600)), 1, AT, 'error');
    expect(ERROR_MESSAGE_LIMIT).toBe(500);
    expect(entry.message).toHaveLength(500);
    expect(entry.message).toBe(`${'m'.repeat(499)}…`);
  });

  it('keeps a message of exactly 500 characters whole', () => {
    expect(describeError(new Error('m'.repeat(500)), 1, AT, 'error').message).toBe('m'.repeat(500));
  });

  it('truncates the stack to 1000 characters', () => {
    const error = new Error('deep');
    error.stack = `Error: deep\n${'    at frame (file.ts:1:1)\n'.repeat(100)}`;
    const entry = describeError(error, 1, AT, 'error');
    expect(ERROR_STACK_LIMIT).toBe(1000);
    expect(entry.stack).toHaveLength(1000);
    expect(entry.stack?.startsWith('Error: deep\n    at frame')).toBe(true);
    expect(entry.stack?.endsWith('…')).toBe(true);
  });

  it('omits the stack when the error has none', () => {
    const error = new Error('no stack');
    error.stack = undefined;
    expect(describeError(error, 1, AT, 'timeout')).toEqual({
      attempt: 1,
      at: '2026-03-01T12:00:00.000Z',
      reason: 'timeout',
      name: 'Error',
      message: 'no stack',
    });
  });

  it('uses "Error" for an empty name and caps long names at 100 characters', () => {
    const unnamed = new Error('x');
    unnamed.name = '';
    expect(describeError(unnamed, 1, AT, 'error').name).toBe('Error');
    const long = new Error('x');
    long.name = 'N'.repeat(150);
    expect(describeError(long, 1, AT, 'error').name).toBe(`${'N'.repeat(99)}…`);
  });

  it('records a thrown string as the message', () => {
    const entry = describeError('plain failure', 1, AT, 'error');
    expect(entry.name).toBe('Error');
    expect(entry.message).toBe('plain failure');
  });

  it('records a thrown object as its JSON', () => {
    const entry = describeError({ code: 'E42', retry: false }, 3, AT, 'error');
    expect(entry.name).toBe('Error');
    expect(entry.message).toBe('{"code":"E42","retry":false}');
    expect(entry.attempt).toBe(3);
  });

  it('truncates the JSON of a large thrown object', () => {
    expect(describeError({ blob: 'z'.repeat(2000) }, 1, AT, 'error').message).toHaveLength(500);
  });

  it('records a thrown undefined as "undefined", not an empty message', () => {
    const entry = describeError(undefined, 1, AT, 'error');
    expect(entry.name).toBe('Error');
    expect(entry.message).toBe('undefined');
  });

  it('records a thrown null as "null"', () => {
    expect(describeError(null, 1, AT, 'error').message).toBe('null');
  });

  it('does not throw for a thrown object that JSON cannot encode (circular)', () => {
    const circular: Record<string, unknown> = { code: 'LOOP' };
    circular.self = circular;
    const entry = describeError(circular, 1, AT, 'error');
    expect(entry.reason).toBe('error');
    expect(entry.message.length).toBeGreaterThan(0);
  });

  it('does not throw for a thrown bigint', () => {
    expect(describeError(10n, 1, AT, 'error').message).toBe('10');
  });
});

describe('appendError', () => {
  const entry = (attempt: number): AttemptError => ({
    attempt,
    at: new Date(AT + attempt).toISOString(),
    reason: 'error',
    name: 'Error',
    message: `failure ${attempt}`,
  });

  it('appends to the end', () => {
    expect(appendError([entry(1)], entry(2)).map((e) => e.attempt)).toEqual([1, 2]);
  });

  it('keeps only the newest 10 entries', () => {
    let history: AttemptError[] = [];
    for (let attempt = 1; attempt <= 12; attempt++) history = appendError(history, entry(attempt));
    expect(ERROR_HISTORY_LIMIT).toBe(10);
    expect(history.map((e) => e.attempt)).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  });

  it('does not modify the history it is given', () => {
    const history = [entry(1), entry(2)];
    const next = appendError(history, entry(3));
    expect(history.map((e) => e.attempt)).toEqual([1, 2]);
    expect(next).not.toBe(history);
  });
});

describe('canonicalJson', () => {
  it('gives the same text whatever the key order', () => {
    const a = canonicalJson({ type: 'echo', payload: { b: 1, a: { y: [1, 2], x: null } } });
    const b = canonicalJson({ payload: { a: { x: null, y: [1, 2] }, b: 1 }, type: 'echo' });
    expect(a).toBe(b);
    expect(a).toBe('{"payload":{"a":{"x":null,"y":[1,2]},"b":1},"type":"echo"}');
  });

  it('sorts keys inside objects nested in arrays, and keeps array order', () => {
    expect(canonicalJson([{ b: 2, a: 1 }, [{ d: 4, c: 3 }], 'z', 0])).toBe('[{"a":1,"b":2},[{"c":3,"d":4}],"z",0]');
    expect(canonicalJson([2, 1])).not.toBe(canonicalJson([1, 2]));
  });

  it('drops undefined object fields like JSON.stringify, and writes undefined array items as null', () => {
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
    expect(canonicalJson([undefined, 1])).toBe('[null,1]');
    expect(canonicalJson(undefined)).toBe('null');
  });

  it('escapes strings and keys as JSON', () => {
    expect(canonicalJson({ 'k"ey': 'line\nbreak' })).toBe('{"k\\"ey":"line\\nbreak"}');
  });

  it('sorts keys by code unit, so upper case comes before lower case', () => {
    expect(canonicalJson({ b: 1, a: 2, B: 3, _: 4 })).toBe('{"B":3,"_":4,"a":2,"b":1}');
  });

  it('distinguishes values JSON distinguishes', () => {
    expect(canonicalJson({ a: 1 })).not.toBe(canonicalJson({ a: '1' }));
    expect(canonicalJson({})).toBe('{}');
    expect(canonicalJson([])).toBe('[]');
  });
});

describe('toView', () => {
  const job: Job = {
    id: 'job-1',
    type: 'echo',
    state: 'running',
    payload: { n: 1 },
    payloadHash: 'abc123',
    attempts: 1,
    maxAttempts: 3,
    createdAt: '2026-03-01T12:00:00.000Z',
    updatedAt: '2026-03-01T12:00:01.000Z',
    runAt: '2026-03-01T12:00:00.000Z',
    startedAt: '2026-03-01T12:00:01.000Z',
    leaseToken: 7,
    leaseOwner: 'worker-abc',
    leaseExpiresAt: AT + 30_000,
    errors: [],
    expiresAt: 1_800_000_000,
  };

  it('shows no wait on a held job: a slot wait recorded while its attempt ran (a takeover in line) is over', () => {
    const waitingFor = {
      kind: 'concurrency' as const,
      limit: 0,
      key: '*',
      ticket: 3,
      since: '2026-03-01T12:00:05.000Z',
    };
    expect(toView({ ...job, state: 'failed', waitingFor }).waitingFor).toBeUndefined();
    expect(toView({ ...job, state: 'held', waitingFor }).waitingFor).toBeUndefined();
    expect(toView({ ...job, state: 'queued', waitingFor }).waitingFor).toMatchObject({ kind: 'concurrency' });
  });

  it('hides lease fields, the payload hash and the TTL', () => {
    const view = toView(job);
    expect(Object.keys(view).sort()).toEqual(
      [
        'id',
        'type',
        'state',
        'payload',
        'attempts',
        'maxAttempts',
        'createdAt',
        'updatedAt',
        'runAt',
        'startedAt',
        'finishedAt',
        'lastError',
        'errors',
        'progress',
        'result',
        'retries',
      ].sort(),
    );
    expect(JSON.stringify(view)).not.toMatch(/lease|worker-abc|abc123|expiresAt/);
  });

  it('fills absent optional fields with null', () => {
    expect(toView(job)).toStrictEqual({
      id: 'job-1',
      type: 'echo',
      state: 'running',
      payload: { n: 1 },
      attempts: 1,
      maxAttempts: 3,
      createdAt: '2026-03-01T12:00:00.000Z',
      updatedAt: '2026-03-01T12:00:01.000Z',
      runAt: '2026-03-01T12:00:00.000Z',
      startedAt: '2026-03-01T12:00:01.000Z',
      finishedAt: null,
      lastError: null,
      errors: [],
      progress: null,
      result: null,
      retries: 0,
    });
  });

  it('passes a result, the last error and finishedAt through', () => {
    const lastError: AttemptError = { attempt: 1, at: job.updatedAt, reason: 'error', name: 'Error', message: 'x' };
    const view = toView({ ...job, state: 'succeeded', result: { ok: true }, lastError, finishedAt: job.updatedAt });
    expect(view.result).toEqual({ ok: true });
    expect(view.lastError).toEqual(lastError);
    expect(view.finishedAt).toBe('2026-03-01T12:00:01.000Z');
  });
});

describe('errorSummary', () => {
  const error: AttemptError = {
    attempt: 2,
    at: new Date(AT).toISOString(),
    reason: 'error',
    name: 'TypeError',
    message: 'x'.repeat(ERROR_MESSAGE_LIMIT),
    stack: 'stack',
  };

  it('drops the stack and cuts the message to the summary limit, or to a smaller room', () => {
    expect(errorSummary(error)).toEqual({
      attempt: 2,
      at: error.at,
      reason: 'error',
      name: 'TypeError',
      message: `${'x'.repeat(ERROR_SUMMARY_MESSAGE_LIMIT - 1)}…`,
    });
    expect(errorSummary(error, 10).message).toBe(`${'x'.repeat(9)}…`);
    expect(errorSummary(error, 1000).message).toHaveLength(ERROR_SUMMARY_MESSAGE_LIMIT);
  });

  it('keeps no message at all when there is no room', () => {
    expect(errorSummary(error, 0).message).toBe('');
    expect(errorSummary(error, -5).message).toBe('');
    expect(errorSummary({ ...error, message: '' }, 0).message).toBe('');
  });
});
