/**
 * The system chaos run's flow-control invariants (8 to 11 in test/chaos/system-checks.ts) on
 * made-up records: each holds on a record that keeps its promise and is violated by one that
 * breaks it, so the chaos run's checks can fail.
 */
import { describe, expect, it } from 'vitest';
import type { Job } from '../../shared/core/job';
import { type CheckInput, checkInvariants, INVARIANTS } from '../chaos/system-checks';
import { CHAOS_RATE_LIMIT, CHAOS_THROTTLE, flowTypes, pacedTypes } from '../chaos/system-flow';
import { SystemObserver } from '../chaos/system-observer';
import type { PlannedJob } from '../chaos/system-plan';
import { gcraWorst } from '../support/gcra';
import { ProbeTracker } from '../support/probes';

const T0 = Date.parse('2026-11-23T12:00:00.000Z');

function planned(id: string, type: string, tag: string): PlannedJob {
  return {
    id,
    type,
    via: 'single',
    timing: 'now',
    behaviour: 'succeed',
    backoffKind: 'short',
    backoff: { kind: 'constant', delayMs: 100 },
    payload: { tag },
    maxAttempts: 3,
    duplicates: [],
  };
}

function stored(id: string, type: string, tag: string, over: Partial<Job> = {}): Job {
  const at = new Date(T0).toISOString();
  return {
    id,
    type,
    state: 'succeeded',
    payload: { tag },
    payloadHash: 'h',
    attempts: 1,
    maxAttempts: 3,
    createdAt: at,
    updatedAt: at,
    runAt: at,
    leaseToken: 1,
    errors: [],
    ...over,
  };
}

/** A world of records: jobs planned and stored, executions (real ms) and starts (driven ms). */
class Records {
  readonly jobs: PlannedJob[] = [];
  readonly stored = new Map<string, Job>();
  readonly tracker = new ProbeTracker();
  readonly observer = new SystemObserver(T0);

  job(id: string, type: string, tag: string, over: Partial<Job> = {}): this {
    this.jobs.push(planned(id, type, tag));
    this.stored.set(id, stored(id, type, tag, over));
    return this;
  }

  ran(id: string, start: number, end: number, series = 0): this {
    const e = this.tracker.start(id, 1);
    this.tracker.end(e, 'completed');
    e.startedAt = T0 + start;
    e.endedAt = T0 + end;
    const s = { attempt: 1, series, runAt: T0, drivenAt: T0 + start, realAt: T0 + start, skewMs: 0 };
    this.observer.starts.set(id, [...(this.observer.starts.get(id) ?? []), s]);
    return this;
  }

  check(extra: Partial<CheckInput> = {}) {
    return checkInvariants({
      jobs: this.jobs,
      schedules: [],
      stored: this.stored,
      scheduleItems: new Map(),
      dlqBodies: [],
      observer: this.observer,
      tracker: this.tracker,
      faults: [],
      finalNow: T0 + 3600_000,
      slotsHandledBy: T0,
      maxSkewMs: 0,
      ...extra,
    }).counts;
  }
}

const [eight, nine, ten, eleven] = [INVARIANTS[7], INVARIANTS[8], INVARIANTS[9], INVARIANTS[10]];
const scope = { label: 'singleton scope', types: ['flo-q', 'flo-x'], limit: 1 };
const paced = pacedTypes(flowTypes(60));
const throttleInterval = (CHAOS_THROTTLE.periodSeconds * 1000) / CHAOS_THROTTLE.limit;

describe('chaos invariant 8: a limit over types sharing a scope', () => {
  it('holds when two types of one key take turns, and is violated when they overlap', () => {
    const turns = new Records().job('a', 'flo-q', 'k').job('b', 'flo-x', 'k').ran('a', 0, 100).ran('b', 100, 200);
    expect(turns.check({ limits: [scope] })[eight]).toEqual({ checked: 2, violated: 0 });
    const overlap = new Records().job('a', 'flo-q', 'k').job('b', 'flo-x', 'k').ran('a', 0, 100).ran('b', 50, 200);
    expect(overlap.check({ limits: [scope] })[eight].violated).toBe(1);
    const otherKeys = new Records().job('a', 'flo-q', 'k').job('b', 'flo-x', 'j').ran('a', 0, 100).ran('b', 50, 200);
    expect(otherKeys.check({ limits: [scope] })[eight].violated).toBe(0);
  });
});

describe('chaos invariant 9: no slot held by a finished job', () => {
  it('is violated by a finished holder, not by a running one', () => {
    const r = new Records().job('done', 'flo-q', 'k').job('busy', 'flo-q', 'j', { state: 'running' });
    const counts = r.check({
      slotKeys: 2,
      slotHolders: [
        { scope: '@sys-one', key: 'k', jobId: 'done' },
        { scope: '@sys-one', key: 'j', jobId: 'busy' },
      ],
    });
    expect(counts[nine]).toEqual({ checked: 2, violated: 1 });
  });

  it('is violated by a held holder too (its attempt gave its slots back when it ended)', () => {
    const r = new Records().job('held', 'flo-q', 'k', { state: 'held', attempts: 1 });
    const counts = r.check({ slotKeys: 1, slotHolders: [{ scope: '@sys-one', key: 'k', jobId: 'held' }] });
    expect(counts[nine]).toEqual({ checked: 1, violated: 1 });
  });
});

describe('chaos invariant 1: an acknowledged job is settled at the end', () => {
  it('takes a held job (its replay diverged, an operator to act) as settled, and a queued one past due as lost', () => {
    const r = new Records()
      .job('held', 'flo-q', 'k', { state: 'held', attempts: 1 })
      .job('lost', 'flo-q', 'j', { state: 'queued', attempts: 0 });
    for (const id of ['held', 'lost']) r.observer.acknowledge(id, 201, 'single');
    const counts = r.check();
    expect(counts[INVARIANTS[0]]).toEqual({ checked: 2, violated: 1 });
  });
});

describe('chaos invariant 10: the GCRA bound', () => {
  const window = { earlyMs: 1050, lateMs: 4000 };
  /** Turns at `times` (ms after T0), each asked for and given at its time, or at the time paired with it. */
  const turnsOf = (r: Records, times: (number | [at: number, asked: number])[]) =>
    r.observer.turns.set(
      'flo-t~t|k',
      times.map((t) => {
        const [at, asked] = typeof t === 'number' ? [t, t] : t;
        return { at: T0 + at, askedAt: T0 + asked, givenAt: T0 + asked };
      }),
    );

  it('holds for throttled starts at their turns, and for turns that keep to the bound', () => {
    const r = new Records();
    for (let i = 0; i < 8; i++) r.job(`t${i}`, 'flo-t', 'k').ran(`t${i}`, i * throttleInterval + 300, 0);
    turnsOf(
      r,
      Array.from({ length: 8 }, (_, i) => i * throttleInterval),
    );
    expect(r.check({ paced, throttleWindow: window })[ten]).toEqual({ checked: 16, violated: 0 });
  });

  it('is violated by turns over the bound, and by starts without a turn of their own', () => {
    const dense = new Records().job('t0', 'flo-t', 'k');
    turnsOf(dense, [0, 0, 0, 10]); // burst 2: the third turn at once is one too many
    expect(dense.check({ paced, throttleWindow: window })[ten].violated).toBe(1);
    // the story names the worst window: all four turns, two over the bound
    const worst = gcraWorst(
      [0, 0, 0, 10].map((t) => T0 + t),
      throttleInterval,
      2,
      1,
    );
    expect(worst).toEqual({ excess: 4 - (2 + 11 / throttleInterval), from: T0, to: T0 + 10 });
    const unthrottled = new Records();
    for (let i = 0; i < 4; i++) unthrottled.job(`t${i}`, 'flo-t', 'k').ran(`t${i}`, i * 100, 0);
    turnsOf(unthrottled, [0, throttleInterval]); // two turns, four starts
    expect(unthrottled.check({ paced, throttleWindow: window })[ten].violated).toBe(1);
    const late = new Records().job('t0', 'flo-t', 'k').ran('t0', 5000, 0);
    turnsOf(late, [0]); // started 5 s after its turn
    expect(late.check({ paced, throttleWindow: window })[ten].violated).toBe(1);
    const early = new Records().job('t0', 'flo-t', 'k').ran('t0', 0, 0);
    turnsOf(early, [2000]); // started 2 s before its turn
    expect(early.check({ paced, throttleWindow: window })[ten].violated).toBe(1);
  });

  describe('with a throttle changed at run time (invariant 19 for the turns under the change)', () => {
    // the operator slows key k to a turn every 3 s, no bursts (sent at 3 s, answered at 3.5 s),
    // and removes it (sent at 5 s, answered at 5.5 s)
    const slow = { limit: 1, periodSeconds: 3, burst: 1 };
    const changes = [
      { key: 'k', throttle: slow, sentAt: T0 + 3_000, ackAt: T0 + 3_500 },
      { key: 'k', sentAt: T0 + 5_000, ackAt: T0 + 5_500 },
    ];
    const check = (times: (number | [number, number])[]) => {
      const r = new Records();
      turnsOf(r, times);
      const counts = r.check({ paced, throttleWindow: window, paceChanges: [{ type: 'flo-t', key: 'k', changes }] });
      return { ten: counts[ten], nineteen: counts[INVARIANTS[18]] };
    };

    it('holds for the turns given under each pace, though more than the spec allows across the removal', () => {
      // the spec's burst of 2, then three turns asked for at 4 s, 3 s apart under the change; at
      // the removal the key is 2.5 turns ahead (its TAT 13 s), so 2.5 of the spec's 2 s (10.5 s):
      // turns asked for at 6 s come at 8.5, 10.5 and 12.5 s, between those given under the change
      // (5 within 5.5 s, more than the spec's 2 + 5.5 / 2)
      const under: [number, number][] = [
        [4_000, 4_000],
        [7_000, 4_000],
        [10_000, 4_000],
      ];
      const after: [number, number][] = [
        [8_500, 6_000],
        [10_500, 6_000],
        [12_500, 6_000],
      ];
      const out = check([0, 0, 2_000, ...under, ...after]);
      expect(out.ten).toEqual({ checked: 9, violated: 0 });
      expect(out.nineteen).toEqual({ checked: 3, violated: 0 });
    });

    it('is violated by turns asked for after the change was answered at the spec pace', () => {
      const out = check([0, 0, 2_000, [4_000, 4_000], [4_000, 4_000], [6_000, 4_000]]);
      expect(out.nineteen).toEqual({ checked: 3, violated: 1 });
      expect(out.ten.violated).toBe(0);
    });

    it('bounds no turn asked for while the change was under way by either pace', () => {
      // asked for at 3.2 s, before the answer, and given at once: under the old pace or the new
      const out = check([0, 0, 2_000, 3_200, [4_500, 4_000]]);
      expect(out.nineteen).toEqual({ checked: 1, violated: 0 });
      expect(out.ten.violated).toBe(0);
    });
  });

  it('counts the rate limit on accepted jobs only', () => {
    const at = (ms: number) => new Date(T0 + ms).toISOString();
    const r = new Records();
    for (let i = 0; i < 6; i++) {
      const skipped = i >= CHAOS_RATE_LIMIT.limit;
      r.job(`r${i}`, 'flo-r', 'k', {
        createdAt: at(i),
        ...(skipped ? { state: 'skipped', skipReason: { kind: 'rate-limit', key: 'k', at: at(i) } } : {}),
      });
    }
    expect(r.check({ paced })[ten]).toEqual({ checked: CHAOS_RATE_LIMIT.limit, violated: 0 });
    const over = new Records();
    for (let i = 0; i <= CHAOS_RATE_LIMIT.limit; i++) over.job(`r${i}`, 'flo-r', 'k', { createdAt: at(i) });
    expect(over.check({ paced })[ten].violated).toBe(1);
  });
});

describe('chaos invariant 11: skipped jobs never ran; debounced jobs lead to their run', () => {
  const absorbed = (by: string, key = 'k'): Partial<Job> => ({
    state: 'skipped',
    attempts: 0,
    debounceKey: key,
    skipReason: { kind: 'debounce', key, by, at: new Date(T0).toISOString() },
  });

  it('holds for a chain that ends in a run of its key', () => {
    const r = new Records()
      .job('d1', 'flo-d', 'k', absorbed('d2'))
      .job('d2', 'flo-d', 'k', absorbed('d3'))
      .job('d3', 'flo-d', 'k', { debounceKey: 'k' });
    expect(r.check({ debounced: ['flo-d'] })[eleven]).toEqual({ checked: 2, violated: 0 });
  });

  it('is violated by a skipped job that ran, a chain to nowhere, to another key, or a loop', () => {
    const ranAnyway = new Records()
      .job('s', 'flo-k', 'k', { state: 'skipped', skipReason: { kind: 'singleton', key: 'k', at: '' } })
      .ran('s', 0, 10);
    expect(ranAnyway.check()[eleven].violated).toBe(1);
    const nowhere = new Records().job('d1', 'flo-d', 'k', absorbed('gone'));
    expect(nowhere.check()[eleven].violated).toBe(1);
    const otherKey = new Records()
      .job('d1', 'flo-d', 'k', absorbed('d2'))
      .job('d2', 'flo-d', 'j', { debounceKey: 'j' });
    expect(otherKey.check()[eleven].violated).toBe(1);
    const loop = new Records().job('d1', 'flo-d', 'k', absorbed('d2')).job('d2', 'flo-d', 'k', absorbed('d1'));
    expect(loop.check()[eleven].violated).toBe(2);
    const stuck = new Records()
      .job('d1', 'flo-d', 'k', absorbed('d2'))
      .job('d2', 'flo-d', 'k', { debounceKey: 'k', state: 'queued', attempts: 0 });
    expect(stuck.check()[eleven].violated).toBe(1);
  });

  it('a skipped job that ran in an earlier series (before an operator retry) is not a violation', () => {
    const r = new Records()
      .job('s', 'flo-k', 'k', { state: 'skipped', retries: 1, skipReason: { kind: 'singleton', key: 'k', at: '' } })
      .ran('s', 0, 10, 0);
    expect(r.check()[eleven]).toEqual({ checked: 1, violated: 0 });
  });
});
