/**
 * Priorities (shared/core/priority.ts): the spec option, an enqueue's value, the rank and its
 * sort key, and the starvation bound the rank gives.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJobType } from '../../shared/core/job-type';
import {
  checkPriority,
  MAX_PRIORITY,
  passWindowMs,
  priorityOf,
  priorityProblem,
  rankKey,
  rankOf,
  resolvePriority,
} from '../../shared/core/priority';
import { ConfigError, ValidationError } from '../../shared/errors';

const payload = z.object({ tenant: z.string() });

describe('the spec option', () => {
  it('takes default and agingSeconds, with their defaults', () => {
    const spec = defineJobType({ type: 'p', payload, concurrency: [{ limit: 2 }], priority: { default: 3 } });
    expect(spec.priority).toEqual({ default: 3 });
    expect(priorityOf(spec.priority ?? {})).toEqual({ default: 3, agingSeconds: 30 });
  });

  it.each([
    [null, 'priority must be an object'],
    [{ default: 11 }, 'priority.default must be an integer from 0 to 10'],
    [{ default: 1.5 }, 'priority.default must be an integer'],
    [{ default: -1 }, 'priority.default must be an integer'],
    [{ agingSeconds: 0 }, 'priority.agingSeconds must be a number of seconds above 0'],
    [{ agingSeconds: Number.POSITIVE_INFINITY }, 'priority.agingSeconds must be'],
    [{ agingSeconds: 86_401 }, 'at most 86400'],
    [{ levels: 3 }, 'priority has no option "levels"'],
  ])('refuses %j', (value, message) => {
    expect(priorityProblem(value)).toContain(message);
    expect(() => defineJobType({ type: 'p', payload, concurrency: [{ limit: 2 }], priority: value as never })).toThrow(
      ConfigError,
    );
  });

  it('is refused on a type with no concurrency or singleton limit, saying why', () => {
    expect(() => defineJobType({ type: 'p', payload, priority: {} })).toThrow(
      /priority orders the line of a concurrency or singleton limit or a throttle, and this type has none/,
    );
    expect(defineJobType({ type: 's', payload, singleton: { mode: 'queue' }, priority: {} }).priority).toEqual({});
  });
});

describe('an enqueue priority', () => {
  it('is an integer 0 to 10 on a type that takes one', () => {
    expect(checkPriority(0, true)).toBe(0);
    expect(checkPriority(MAX_PRIORITY, true)).toBe(MAX_PRIORITY);
    for (const bad of [-1, 11, 2.5, '3', null]) {
      const error = (() => {
        try {
          checkPriority(bad, true);
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(ValidationError);
      expect(error).toMatchObject({ code: 'invalid_priority', status: 400 });
    }
  });

  it('is refused (400 invalid_priority, field priority) on a type that takes none', () => {
    expect(() => checkPriority(1, false, 'jobs[2].priority')).toThrow(
      expect.objectContaining({
        code: 'invalid_priority',
        issues: [{ path: 'jobs[2].priority', message: 'the type takes no priority' }],
      }),
    );
  });

  it("of a new job is the one given, else the type's default, and none for a type without the option", () => {
    expect(resolvePriority({ default: 2 }, 7)).toBe(7);
    expect(resolvePriority({ default: 2 }, 0)).toBe(0);
    expect(resolvePriority({ default: 2 }, undefined)).toBe(2);
    expect(resolvePriority({}, undefined)).toBe(0);
    expect(resolvePriority(undefined, undefined)).toBeUndefined();
    expect(() => resolvePriority(undefined, 7, 'jobs.3.priority')).toThrow(
      expect.objectContaining({
        code: 'invalid_priority',
        issues: [expect.objectContaining({ path: 'jobs.3.priority' })],
      }),
    );
    expect(() => resolvePriority({ default: 2 }, 11)).toThrow(expect.objectContaining({ code: 'invalid_priority' }));
  });
});

const job = fc.record({
  id: fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !s.includes('#')),
  dueAt: fc.integer({ min: Date.parse('2020-01-01'), max: Date.parse('2100-01-01') }),
  priority: fc.integer({ min: 0, max: MAX_PRIORITY }),
});

describe('the rank', () => {
  it('sorts as its key: comparing the keys as strings orders by rank, then by job id', () => {
    fc.assert(
      fc.property(job, job, fc.integer({ min: 1, max: 86_400 }), (a, b, agingSeconds) => {
        const ra = rankOf({ ...a, agingSeconds });
        const rb = rankOf({ ...b, agingSeconds });
        const ka = rankKey(ra, a.id);
        const kb = rankKey(rb, b.id);
        if (Math.round(ra) !== Math.round(rb)) expect(ka < kb).toBe(Math.round(ra) < Math.round(rb));
        else expect(ka < kb).toBe(`#${a.id}` < `#${b.id}`);
      }),
    );
  });

  it('serves a higher priority first among jobs due at once, and the older first within a priority', () => {
    const at = Date.parse('2026-01-01');
    const rank = (dueAt: number, priority: number) => rankOf({ dueAt, priority, agingSeconds: 30 });
    expect(rank(at, 5)).toBeLessThan(rank(at, 4));
    expect(rank(at, 0)).toBeLessThan(rank(at + 1, 0));
    // a head start of 30 s per step: priority 1 due 29 s later is still first, 31 s later is not
    expect(rank(at + 29_000, 1)).toBeLessThan(rank(at, 0));
    expect(rank(at + 31_000, 1)).toBeGreaterThan(rank(at, 0));
  });

  it('bounds the wait: no job due after the pass window of a waiting job ranks ahead of it, whatever its priority', () => {
    fc.assert(
      fc.property(job, job, fc.integer({ min: 1, max: 3_600 }), (waiting, later, agingSeconds) => {
        const window = passWindowMs(waiting.priority, agingSeconds);
        fc.pre(later.dueAt > waiting.dueAt + window);
        expect(rankOf({ ...later, agingSeconds })).toBeGreaterThan(rankOf({ ...waiting, agingSeconds }));
      }),
    );
    // and the window is tight: a job of priority 10 due just inside it ranks ahead
    const at = Date.parse('2026-01-01');
    const window = passWindowMs(0, 30);
    expect(window).toBe(300_000);
    expect(rankOf({ dueAt: at + window - 1, priority: MAX_PRIORITY, agingSeconds: 30 })).toBeLessThan(
      rankOf({ dueAt: at, priority: 0, agingSeconds: 30 }),
    );
  });
});
