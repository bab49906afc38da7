/**
 * Invariant 19 of the system chaos run (test/chaos/system-limits.ts) on made-up histories: it
 * holds when, from the first start after the lowered limit was acknowledged, the key's running
 * jobs stay within it (those that started before, or were handed their place before, finish
 * above it), and is violated when a start whose place came after it finds more running.
 */
import { describe, expect, it } from 'vitest';
import type { ExecutionSpan } from '../chaos/system-fair';
import { checkRuntimeLimits, type LimitChange, type PaceChange, pacePeriods } from '../chaos/system-limits';
import { SystemObserver } from '../chaos/system-observer';
import type { PlannedJob } from '../chaos/system-plan';
import { logAt } from '../support/at-time';

const T0 = Date.parse('2026-11-29T12:00:00.000Z');
const SCOPE = 'sys-f#0';

function world() {
  const observer = new SystemObserver(T0);
  const jobs: PlannedJob[] = [];
  const executions = new Map<string, ExecutionSpan[]>();
  const changes: LimitChange[] = [];
  const w = {
    job(id: string, key = 'key-0') {
      jobs.push({ id, type: 'sys-f', payload: { tag: key } } as PlannedJob);
      return w;
    },
    ran(id: string, from: number, to?: number, end = 'completed') {
      executions.set(id, [
        ...(executions.get(id) ?? []),
        { startedAt: T0 + from, ...(to === undefined ? {} : { endedAt: T0 + to, end }) },
      ]);
      return w;
    },
    handed(ms: number, to: string, key = 'key-0') {
      logAt((line) => observer.sink(line), T0)(ms, {
        message: 'handed a place in line on',
        jobId: 'x',
        to,
        scope: SCOPE,
        key,
      });
      return w;
    },
    change(sent: number, ack: number | undefined, limit?: number, key = 'key-0', handedOn: string[] = []) {
      changes.push({
        key,
        ...(limit === undefined ? {} : { limit }),
        sentAt: T0 + sent,
        ...(ack === undefined ? {} : { ackAt: T0 + ack }),
        handedOn,
      });
      return w;
    },
    check: () => checkRuntimeLimits(observer, { scope: SCOPE, jobs, executions, changes, marginMs: 1_000 }),
  };
  return w;
}

describe('invariant 19: a limit changed at run time holds from the next start on', () => {
  it('holds when the jobs running when it was lowered finish above it, and later starts keep to it', () => {
    const w = world().job('a').job('b').job('c').job('d').job('e');
    // 3 run under the spec's limit; lowered to 1 at 5 s; none starts until only... one runs
    w.ran('a', 0, 8_000).ran('b', 0, 12_000).ran('c', 1_000, 14_000);
    w.change(4_000, 5_000, 1);
    w.handed(14_010, 'd').ran('d', 14_100, 16_000);
    w.handed(16_010, 'e').ran('e', 16_100, 18_000);
    const out = w.check();
    expect(out.violations).toEqual([]);
    expect(out.checked).toBe(2);
  });

  it('holds for a job handed its place before the change, starting after it', () => {
    const w = world().job('a').job('b').job('c');
    w.ran('a', 0, 20_000).ran('b', 0, 20_000);
    w.handed(4_500, 'c').change(4_000, 5_000, 1).ran('c', 7_000, 9_000);
    expect(w.check()).toEqual({ checked: 0, violations: [] });
  });

  it('holds once the limit was removed: the spec holds again', () => {
    const w = world().job('a').job('b').job('c');
    w.change(0, 500, 1).ran('a', 2_000, 20_000);
    w.change(10_000, 10_400, undefined, 'key-0', ['b']).ran('b', 10_500, 20_000).ran('c', 11_000, 20_000);
    expect(w.check()).toEqual({ checked: 1, violations: [] });
  });

  it('holds on another key: the change is the key’s own', () => {
    const w = world().job('a').job('b', 'key-1').job('c', 'key-1');
    w.change(0, 500, 1).ran('a', 2_000, 20_000).ran('b', 3_000, 20_000).ran('c', 3_000, 20_000);
    expect(w.check()).toEqual({ checked: 1, violations: [] });
  });

  it('is violated when a job starts after the change with the key at its new limit', () => {
    const w = world().job('a').job('b').job('c');
    w.ran('a', 0, 20_000);
    w.change(4_000, 5_000, 1);
    w.ran('b', 8_000, 10_000); // took its place 3 s after the change: a still runs
    w.handed(10_010, 'c').ran('c', 10_100, 12_000);
    const out = w.check();
    expect(out.checked).toBe(2);
    expect(out.violations.map((v) => v.subject)).toEqual(['b', 'c']);
    expect(out.violations[0]?.detail).toContain('whose limit was lowered to 1');
    expect(out.violations[0]?.detail).toContain('with 2 jobs of the key running');
  });

  it('is not checked before the change was acknowledged, nor within the hand-off after it', () => {
    const w = world().job('a').job('b').job('c');
    w.ran('a', 0, 20_000).change(4_000, 5_000, 1);
    w.ran('b', 4_500, 10_000).ran('c', 5_500, 10_000);
    expect(w.check()).toEqual({ checked: 0, violations: [] });
  });
});

describe('invariant 19 for a throttle: the pace each turn was given under', () => {
  const turn = (at: number, askedAt = at, givenAt = askedAt) => ({
    at: T0 + at,
    askedAt: T0 + askedAt,
    givenAt: T0 + givenAt,
  });
  const slow = { limit: 1, periodSeconds: 3, burst: 1 };

  it("puts a turn under a change from its answer to the next change's send, and one given during a call under none", () => {
    const turns = [turn(0), turn(2_000), turn(3_100), turn(4_000), turn(9_000, 4_000), turn(11_000), turn(12_000)];
    const changes: PaceChange[] = [
      { key: 'k', throttle: slow, sentAt: T0 + 3_000, ackAt: T0 + 3_500 },
      { key: 'k', sentAt: T0 + 10_000, ackAt: T0 + 10_500 },
    ];
    const periods = pacePeriods(turns, changes).map((p) => ({
      pace: p.change === undefined ? 'spec' : (p.change.throttle ?? 'removed'),
      at: p.turns.map((t) => t.at - T0),
    }));
    expect(periods).toEqual([
      { pace: 'spec', at: [0, 2_000] },
      { pace: slow, at: [4_000, 9_000] },
      { pace: 'removed', at: [11_000, 12_000] },
    ]);
  });

  it('puts the turns after a change that was never answered under none, until the next answered one', () => {
    const turns = [turn(1_000), turn(5_000), turn(12_000)];
    const changes: PaceChange[] = [
      { key: 'k', throttle: slow, sentAt: T0 + 3_000 },
      { key: 'k', sentAt: T0 + 10_000, ackAt: T0 + 10_500 },
    ];
    expect(pacePeriods(turns, changes).map((p) => p.turns.map((t) => t.at - T0))).toEqual([[1_000], [12_000]]);
  });
});
