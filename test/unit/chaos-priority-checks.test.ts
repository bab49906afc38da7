/**
 * Invariant 17 of the system chaos run (test/chaos/system-priority.ts) on made-up log lines: it
 * holds when each place goes to the lowest rank waiting (or to a job that joined within the
 * hand-off in flight), and is violated when a place passes over a job of lower rank that had
 * waited, or when a job of the type took a ticket.
 */
import { describe, expect, it } from 'vitest';
import { SystemObserver } from '../chaos/system-observer';
import { checkRankedOrder } from '../chaos/system-priority';
import { logAt } from '../support/at-time';

const T0 = Date.parse('2026-11-28T12:00:00.000Z');
const SCOPE = 'sys-b#0';
const r = (rank: number, job: string) => `${String(rank).padStart(15, '0')}#${job}`;

/** An observer fed log lines at real times `T0 + ms`. */
function world() {
  const observer = new SystemObserver(T0);
  const at = logAt((line) => observer.sink(line), T0);
  return {
    observer,
    waits: (ms: number, job: string, rank: number, key = 'key-0') =>
      at(ms, { message: 'waiting for a concurrency slot', jobId: job, scope: SCOPE, key, rank: r(rank, job) }),
    handed: (ms: number, by: string, to: string, rank: number, key = 'key-0') =>
      at(ms, { message: 'handed a place in line on', jobId: by, to, scope: SCOPE, key, rank: r(rank, to) }),
    starts: (ms: number, job: string) => at(ms, { message: 'attempt started', jobId: job, attempt: 1 }),
  };
}

const check = (observer: SystemObserver, ticketsIssued = 0) =>
  checkRankedOrder(observer, { scope: SCOPE, ticketsIssued, marginMs: 1_000 });

describe('invariant 17: a type with priorities serves its lines by rank', () => {
  it('holds when each place goes to the lowest rank waiting', () => {
    const w = world();
    w.waits(0, 'low', 50);
    w.waits(100, 'high', 10);
    w.handed(5_000, 'holder', 'high', 10);
    w.handed(9_000, 'high', 'low', 50);
    const out = check(w.observer);
    expect(out.violations).toEqual([]);
    expect(out.checked).toBe(3);
  });

  it('holds when the lower rank joined within the hand-off in flight', () => {
    const w = world();
    w.waits(0, 'low', 50);
    w.waits(4_500, 'high', 10); // 500 ms before the hand-off: the admitter may have read the line before it
    w.handed(5_000, 'holder', 'low', 50);
    expect(check(w.observer).violations).toEqual([]);
  });

  it('holds when the lower rank was served just before its own waiting line (logged after its join)', () => {
    const w = world();
    w.handed(9_800, 'holder', 'high', 10);
    w.waits(10_000, 'high', 10); // its join came first; the line saying so, after its admission
    w.waits(0, 'low', 50);
    w.handed(12_000, 'other', 'low', 50);
    expect(check(w.observer).violations).toEqual([]);
  });

  it('holds across keys: each key is its own line', () => {
    const w = world();
    w.waits(0, 'high', 10, 'key-1');
    w.waits(0, 'low', 50, 'key-0');
    w.handed(5_000, 'holder', 'low', 50, 'key-0');
    expect(check(w.observer).violations).toEqual([]);
  });

  it('takes no job for waiting whose place came with no hand-on logged (an admission whose line was lost)', () => {
    // high joined, and started with no hand-on to it logged: its place was handed on at some
    // time before its start (the admitter's answers lost, or the admitter killed after its write)
    const before = world();
    before.waits(0, 'high', 10);
    before.starts(3_000, 'high');
    before.handed(5_000, 'holder', 'low', 50);
    expect(check(before.observer).violations).toEqual([]);
    // it started only after this hand-off: its place may still have come before it
    const after = world();
    after.waits(0, 'high', 10);
    after.handed(5_000, 'holder', 'low', 50);
    after.starts(8_000, 'high');
    expect(check(after.observer).violations).toEqual([]);
    // but a job whose next start follows a hand-on to it, logged after this one, did wait through it
    const waited = world();
    waited.waits(0, 'high', 10);
    waited.handed(5_000, 'holder', 'low', 50);
    waited.handed(7_000, 'low', 'high', 10);
    waited.starts(8_000, 'high');
    expect(check(waited.observer).violations).toEqual([
      { subject: 'low', detail: expect.stringContaining('while high had waited since +0.00s under the lower rank') },
    ]);
  });

  it('is violated when a place passes over a lower rank that had waited', () => {
    const w = world();
    w.waits(0, 'low', 50);
    w.waits(100, 'high', 10);
    w.handed(5_000, 'holder', 'low', 50);
    const out = check(w.observer);
    expect(out.violations).toEqual([
      {
        subject: 'low',
        detail: expect.stringContaining('while high had waited since +0.10s under the lower rank'),
      },
    ]);
  });

  it('is violated when a job that was served and joined again is passed over', () => {
    const w = world();
    w.waits(0, 'a', 10);
    w.handed(1_000, 'holder', 'a', 10);
    w.waits(3_000, 'a', 20); // a retry of a waits again
    w.waits(3_000, 'b', 30);
    w.handed(8_000, 'holder', 'b', 30);
    expect(check(w.observer).violations.map((v) => v.subject)).toEqual(['b']);
  });

  it('is violated when the slots of the type issued a ticket', () => {
    const w = world();
    expect(check(w.observer, 2).violations).toEqual([
      { subject: SCOPE, detail: expect.stringContaining('issued 2 tickets of the oldest-first line') },
    ]);
  });
});

describe("invariant 17 on a throttle's line", () => {
  const PACE = 'flo-t~t';
  function line() {
    const observer = new SystemObserver(T0);
    const at = logAt((l) => observer.sink(l), T0);
    return {
      observer,
      waits: (ms: number, job: string, rank: number) =>
        at(ms, { message: 'waiting in its throttle line', jobId: job, scope: PACE, key: 'k', rank: r(rank, job) }),
      took: (ms: number, job: string, rank: number, takeMs?: number) =>
        at(ms, {
          message: 'took a turn of its throttle line',
          jobId: job,
          scope: PACE,
          key: 'k',
          rank: r(rank, job),
          ...(takeMs === undefined ? {} : { takeMs }),
        }),
      check: () => checkRankedOrder(observer, { scope: PACE, line: 'throttle', ticketsIssued: 0, marginMs: 1_000 }),
    };
  }

  it('holds when each turn goes to the lowest rank waiting', () => {
    const w = line();
    w.waits(0, 'low', 50);
    w.waits(100, 'high', 10);
    w.took(2_000, 'high', 10);
    w.took(4_000, 'low', 50);
    expect(w.check()).toEqual({ checked: 3, violations: [] });
  });

  it('is violated when a turn is taken while a lower rank had waited longer than the hand-off in flight', () => {
    const w = line();
    w.waits(0, 'low', 50);
    w.waits(100, 'high', 10);
    w.took(2_000, 'low', 50);
    const out = w.check();
    expect(out.violations).toHaveLength(1);
    expect(out.violations[0]?.subject).toBe('low');
    expect(out.violations[0]?.detail).toMatch(/took a turn of flo-t~t key k .* while high had waited/);
  });

  it('holds when the lower rank took its turn first, and its line came after (its take’s answers lost, then found applied)', () => {
    const w = line();
    w.waits(0, 'low', 50);
    w.waits(100, 'high', 10);
    // high's take is applied at about 2 s; its answers are lost, and its call ends 900 ms later
    w.took(2_500, 'low', 50);
    w.took(2_900, 'high', 10, 900);
    expect(w.check().violations).toEqual([]);
  });

  it('is violated when the lower rank lost its turn and took another after (its take’s answers lost, not found)', () => {
    const w = line();
    w.waits(0, 'low', 50);
    w.waits(100, 'high', 10);
    // high's take was applied at about 2 s, and no line says so; low takes the next turn, then
    // high joins again and takes a turn after it, in a call of its own
    w.took(2_500, 'low', 50);
    w.waits(2_900, 'high', 10);
    w.took(3_500, 'high', 10, 80);
    const out = w.check();
    expect(out.violations.map((v) => v.subject)).toEqual(['low']);
    expect(out.violations[0]?.detail).toMatch(/while high had waited since \+0\.10s/);
  });

  it('counts a take’s call as in flight for no longer than the hand-off margin', () => {
    const w = line();
    w.waits(0, 'low', 50);
    w.waits(100, 'high', 10);
    w.took(2_500, 'low', 50);
    w.took(6_000, 'high', 10, 5_000); // a call of 5 s counts as 1 s (the margin)
    expect(w.check().violations.map((v) => v.subject)).toEqual(['low']);
  });

  it('holds when a job left the line before the turn: taken out as one that will not come, or cancelled', () => {
    const w = line();
    const at = logAt((l) => w.observer.sink(l), T0);
    w.waits(0, 'gone', 10);
    w.waits(100, 'cancelled', 20);
    w.waits(200, 'low', 50);
    // another job's gate took out the head that will not come; an operator cancelled the other
    at(1_500, {
      message: 'took out of its throttle line a job that will not come',
      jobId: 'gone',
      scope: PACE,
      key: 'k',
      rank: r(10, 'gone'),
    });
    at(1_600, { message: 'job cancelled', jobId: 'cancelled' });
    w.took(5_000, 'low', 50);
    expect(w.check().violations).toEqual([]);
  });

  it('is violated when the job taken out joined again and waited before the turn', () => {
    const w = line();
    const at = logAt((l) => w.observer.sink(l), T0);
    w.waits(0, 'high', 10);
    w.waits(200, 'low', 50);
    at(1_500, {
      message: 'took out of its throttle line a job that will not come',
      jobId: 'high',
      scope: PACE,
      key: 'k',
      rank: r(10, 'high'),
    });
    w.waits(2_000, 'high', 10);
    w.took(5_000, 'low', 50);
    expect(w.check().violations.map((v) => v.subject)).toEqual(['low']);
  });

  it("does not count a slot's lines: the throttle's own lines only", () => {
    const w = line();
    const at = logAt((l) => w.observer.sink(l), T0);
    at(0, { message: 'waiting for a concurrency slot', jobId: 'x', scope: PACE, key: 'k', rank: r(1, 'x') });
    w.waits(10, 'low', 50);
    w.took(2_000, 'low', 50);
    expect(w.check().violations).toEqual([]);
  });
});
