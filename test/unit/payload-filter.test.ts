import { describe, expect, it } from 'vitest';
import { comparableForm, payloadMatches, splitPayloadConditions, valueAt } from '../../shared/core/payload-filter';
import { ValidationError } from '../../shared/errors';

function issuesOf(query: Record<string, string>) {
  try {
    splitPayloadConditions(query);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).issues;
  }
  throw new Error('expected a ValidationError');
}

describe('splitPayloadConditions', () => {
  it('takes payload.<path> parameters out of the query, sorted by path', () => {
    expect(
      splitPayloadConditions({ type: 'mail', 'payload.to.domain': 'x.org', 'payload.a': '1', limit: '5' }),
    ).toEqual({
      conditions: [
        { path: 'a', value: '1' },
        { path: 'to.domain', value: 'x.org' },
      ],
      rest: { type: 'mail', limit: '5' },
    });
  });

  it('refuses more than 3 conditions, naming the parameter group', () => {
    const issues = issuesOf({ 'payload.a': '1', 'payload.b': '2', 'payload.c': '3', 'payload.d': '4' });
    expect(issues).toEqual([{ path: 'payload', message: 'at most 3 payload.<path> conditions' }]);
  });

  it('refuses a bad path or an overlong value, naming the parameter', () => {
    expect(issuesOf({ 'payload.': 'x' })?.map((i) => i.path)).toEqual(['payload.']);
    expect(issuesOf({ 'payload.a..b': 'x' })?.map((i) => i.path)).toEqual(['payload.a..b']);
    expect(issuesOf({ 'payload.a b': 'x' })?.map((i) => i.path)).toEqual(['payload.a b']);
    expect(issuesOf({ 'payload.a.b.c.d.e.f.g.h.i': 'x' })?.map((i) => i.path)).toEqual(['payload.a.b.c.d.e.f.g.h.i']);
    expect(issuesOf({ 'payload.a': 'v'.repeat(257) })?.map((i) => i.path)).toEqual(['payload.a']);
  });
});

describe('matching', () => {
  const payload = { to: { domain: 'x.org' }, n: 42, ok: true, none: null, list: ['a', { b: 'c' }], obj: { k: 1 } };

  it('reads dotted paths through objects and array indexes', () => {
    expect(valueAt(payload, 'to.domain')).toBe('x.org');
    expect(valueAt(payload, 'list.1.b')).toBe('c');
    expect(valueAt(payload, 'list.x')).toBeUndefined();
    expect(valueAt(payload, 'missing.deeper')).toBeUndefined();
    expect(valueAt(payload, 'toString')).toBeUndefined();
  });

  it('compares strings as themselves and numbers, booleans, null as their JSON text; never objects', () => {
    expect(comparableForm('42')).toBe('42');
    expect(comparableForm(42)).toBe('42');
    expect(comparableForm(true)).toBe('true');
    expect(comparableForm(null)).toBe('null');
    expect(comparableForm({})).toBeUndefined();
    expect(comparableForm([])).toBeUndefined();
    expect(payloadMatches(payload, [{ path: 'n', value: '42' }])).toBe(true);
    expect(payloadMatches(payload, [{ path: 'n', value: '42.0' }])).toBe(false);
    expect(payloadMatches(payload, [{ path: 'ok', value: 'true' }])).toBe(true);
    expect(payloadMatches(payload, [{ path: 'none', value: 'null' }])).toBe(true);
    expect(payloadMatches(payload, [{ path: 'obj', value: '{"k":1}' }])).toBe(false);
    expect(payloadMatches(payload, [{ path: 'absent', value: '' }])).toBe(false);
  });

  it('needs every condition (AND); no condition matches everything, even no payload', () => {
    expect(
      payloadMatches(payload, [
        { path: 'n', value: '42' },
        { path: 'to.domain', value: 'x.org' },
      ]),
    ).toBe(true);
    expect(
      payloadMatches(payload, [
        { path: 'n', value: '42' },
        { path: 'to.domain', value: 'y.org' },
      ]),
    ).toBe(false);
    expect(payloadMatches(undefined, [])).toBe(true);
    expect(payloadMatches(undefined, [{ path: 'n', value: '42' }])).toBe(false);
  });
});
