import { describe, expect, it } from 'vitest';
import {
  CLAIMABLE_STATES,
  canTransition,
  isSettled,
  isTerminal,
  JOB_STATES,
  type JobState,
  TERMINAL_STATES,
  TRANSITIONS,
} from '../../shared/core/states';

/**
 * The expected transition matrix, written out by hand: rows are `from`, columns are `to`, in
 * the order of COLUMNS. A change to TRANSITIONS must be mirrored here on purpose.
 */
const COLUMNS = [
  'scheduled',
  'queued',
  'running',
  'retrying',
  'waiting',
  'held',
  'succeeded',
  'failed',
  'cancelled',
  'expired',
  'skipped',
] as const;
const X = true;
const _ = false;
// biome-ignore format: the matrix reads better aligned
const EXPECTED: Record<JobState, readonly boolean[]> = {
  //          sched  queued running retry  wait   held   succ   failed cancel expired skipped
  scheduled: [_,     X,     X,      _,     _,     _,     _,     _,     X,     X,      X],
  queued:    [_,     _,     X,      _,     _,     _,     _,     _,     X,     X,      X],
  running:   [_,     _,     X,      X,     X,     X,     X,     X,     X,     _,      _],
  retrying:  [_,     _,     X,      _,     _,     _,     _,     X,     X,     _,      _],
  waiting:   [_,     X,     X,      _,     _,     _,     _,     X,     X,     _,      _],
  held:      [_,     X,     _,      _,     _,     _,     _,     _,     X,     _,      _],
  succeeded: [_,     _,     _,      _,     _,     _,     _,     _,     _,     _,      _],
  failed:    [_,     _,     _,      _,     _,     _,     _,     _,     _,     _,      _],
  cancelled: [_,     _,     _,      _,     _,     _,     _,     _,     _,     _,      _],
  expired:   [_,     _,     _,      _,     _,     _,     _,     _,     _,     _,      _],
  skipped:   [_,     _,     _,      _,     _,     _,     _,     _,     _,     _,      _],
};

const pairs = COLUMNS.flatMap((from) => COLUMNS.map((to, j) => ({ from, to, allowed: EXPECTED[from][j] as boolean })));

describe('job states', () => {
  it('has exactly the eleven states, in order', () => {
    expect(JOB_STATES).toEqual(COLUMNS);
    expect(Object.keys(TRANSITIONS).sort()).toEqual([...COLUMNS].sort());
  });

  it('covers all 121 pairs in the expected matrix', () => {
    expect(pairs).toHaveLength(121);
    expect(pairs.filter((p) => p.allowed)).toHaveLength(25);
  });

  it.each(pairs.filter((p) => p.allowed))('allows $from → $to', ({ from, to }) => {
    expect(canTransition(from, to)).toBe(true);
  });

  it.each(pairs.filter((p) => !p.allowed))('refuses $from → $to', ({ from, to }) => {
    expect(canTransition(from, to)).toBe(false);
  });

  it('lists no transition twice and none to an unknown state', () => {
    for (const from of JOB_STATES) {
      const targets = TRANSITIONS[from];
      expect(new Set(targets).size).toBe(targets.length);
      for (const to of targets) expect(JOB_STATES).toContain(to);
    }
  });

  it('marks succeeded, failed, cancelled, expired and skipped as terminal, and only those', () => {
    expect([...TERMINAL_STATES].sort()).toEqual(['cancelled', 'expired', 'failed', 'skipped', 'succeeded']);
    expect(JOB_STATES.filter(isTerminal)).toEqual(['succeeded', 'failed', 'cancelled', 'expired', 'skipped']);
  });

  it('has no way out of a terminal state, and a way out of every other state', () => {
    for (const state of JOB_STATES) {
      expect(TRANSITIONS[state].length === 0).toBe(isTerminal(state));
    }
  });

  it('lets every claimable state move to running, and no terminal state', () => {
    expect([...CLAIMABLE_STATES]).toEqual(['scheduled', 'queued', 'retrying', 'waiting']);
    for (const state of CLAIMABLE_STATES) expect(canTransition(state, 'running')).toBe(true);
  });

  it('lets every non-terminal state be cancelled', () => {
    expect(JOB_STATES.filter((s) => canTransition(s, 'cancelled'))).toEqual([
      'scheduled',
      'queued',
      'running',
      'retrying',
      'waiting',
      'held',
    ]);
  });

  it('holds a diverged run for an operator: held is reached from running only, is not terminal but settled, and leaves only to queued or cancelled', () => {
    expect(JOB_STATES.filter((s) => canTransition(s, 'held'))).toEqual(['running']);
    expect(isTerminal('held')).toBe(false);
    expect(isSettled('held')).toBe(true);
    expect(CLAIMABLE_STATES).not.toContain('held');
    expect(TRANSITIONS.held).toEqual(['queued', 'cancelled']);
    expect(JOB_STATES.filter(isSettled)).toEqual(['held', 'succeeded', 'failed', 'cancelled', 'expired', 'skipped']);
  });

  it('lets only a job that never started expire (dispatchBy passed)', () => {
    expect(JOB_STATES.filter((s) => canTransition(s, 'expired'))).toEqual(['scheduled', 'queued']);
  });

  it('lets only a job that never started be skipped (flow control turned it away)', () => {
    expect(JOB_STATES.filter((s) => canTransition(s, 'skipped'))).toEqual(['scheduled', 'queued']);
  });
});
