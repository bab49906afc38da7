/**
 * The replay comparison (shared/core/replay.ts): each call a replay makes against the positions,
 * names and kinds its journal recorded, the end of a run that no longer reaches a recorded call,
 * and what `ctx.patched` answers.
 */
import { describe, expect, it } from 'vitest';
import type { EntryMark, JournalEntry } from '../../shared/core/journal';
import { describeDivergence, ReplayTrail } from '../../shared/core/replay';

const AT = '2026-03-01T12:00:00.000Z';
/** A journal of marked entries, in the order given: `['step', 'a']` at position 0, and so on. */
function journal(calls: [string, string, Partial<EntryMark>?][], version = 'v1'): Map<string, JournalEntry> {
  return new Map(
    calls.map(([kind, name, mark], seq) => [
      `${kind}#${name}`,
      { value: null, at: AT, mark: { seq, version, ...mark } },
    ]),
  );
}

describe('ReplayTrail.check', () => {
  const trail = new ReplayTrail(
    journal([
      ['step', 'a'],
      ['step', 'b'],
      ['sleep', 'nap'],
      ['step', 'c'],
    ]),
  );

  it('an unchanged run agrees at every position', () => {
    expect(trail.check({ kind: 'step', name: 'a' }, 0, true)).toBeUndefined();
    expect(trail.check({ kind: 'step', name: 'b' }, 1, true)).toBeUndefined();
    expect(trail.check({ kind: 'sleep', name: 'nap' }, 2, true)).toBeUndefined();
    expect(trail.check({ kind: 'step', name: 'c' }, 3, true)).toBeUndefined();
    // past the journal's end: new calls
    expect(trail.check({ kind: 'step', name: 'd' }, 4, true)).toBeUndefined();
  });

  it('a renamed step: a new name where the journal recorded another', () => {
    expect(trail.check({ kind: 'step', name: 'b2' }, 1, true)).toEqual({
      position: 1,
      recorded: { kind: 'step', name: 'b', version: 'v1' },
      called: { kind: 'step', name: 'b2' },
    });
  });

  it('a removed step: the next recorded call comes one position early', () => {
    expect(trail.check({ kind: 'sleep', name: 'nap' }, 1, true)).toEqual({
      position: 1,
      recorded: { kind: 'step', name: 'b', version: 'v1' },
      called: { kind: 'sleep', name: 'nap' },
      recordedAt: 2,
    });
  });

  it('a reordered step: a recorded call at another position', () => {
    expect(trail.check({ kind: 'step', name: 'c' }, 2, true)).toMatchObject({
      position: 2,
      recorded: { kind: 'sleep', name: 'nap' },
      recordedAt: 3,
    });
  });

  it('a step that became a sleep of the same name is a different call', () => {
    expect(trail.check({ kind: 'sleep', name: 'b' }, 1, true)).toMatchObject({
      recorded: { kind: 'step', name: 'b' },
      called: { kind: 'sleep', name: 'b' },
    });
  });

  it('calls begun while another is in flight are compared by name only (their order may race)', () => {
    expect(trail.check({ kind: 'step', name: 'c' }, 1, false)).toBeUndefined();
    expect(trail.check({ kind: 'step', name: 'new' }, 1, false)).toBeUndefined();
  });

  it('a signal wait is one call whether its deadline or its outcome was recorded', () => {
    const waits = new ReplayTrail(
      journal([
        ['step', 'a'],
        ['wait', 'approval'],
        ['signal', 'approval', { seq: 1 }],
      ]),
    );
    expect(waits.check({ kind: 'wait', name: 'approval' }, 1, true)).toBeUndefined();
    expect(waits.check({ kind: 'step', name: 'approval' }, 1, true)).toMatchObject({
      recorded: { kind: 'wait', name: 'approval' },
    });
  });

  it('entries without a mark (recorded before marks, or by the API) are compared by name only', () => {
    const old = new ReplayTrail(new Map([['step#a', { value: 1, at: AT }]]));
    expect(old.check({ kind: 'step', name: 'a' }, 3, true)).toBeUndefined();
    expect(old.check({ kind: 'step', name: 'z' }, 0, true)).toBeUndefined();
    expect(old.unmarked).toBe(true);
  });

  it('names the first version of the run', () => {
    expect(trail.firstVersion).toBe('v1');
  });
});

describe('ReplayTrail.unreached', () => {
  const trail = new ReplayTrail(
    journal([
      ['step', 'a'],
      ['step', 'b'],
      ['step', 'c'],
    ]),
  );
  it('a run that made every recorded call reached them all', () => {
    expect(trail.unreached(new Set(['step#a', 'step#b', 'step#c', 'step#d']))).toBeUndefined();
  });
  it('a run that ended without a recorded call (a last step removed) names it', () => {
    expect(trail.unreached(new Set(['step#a', 'step#b']))).toEqual({
      position: 2,
      recorded: { kind: 'step', name: 'c', version: 'v1' },
    });
  });
});

describe('ReplayTrail.patched', () => {
  it('true for a run that has not passed the point yet, false for one whose journal went past it', () => {
    const trail = new ReplayTrail(
      journal([
        ['step', 'a'],
        ['step', 'b'],
      ]),
    );
    expect(trail.patched('fix', 2)).toBe(true);
    expect(trail.patched('fix', 1)).toBe(false);
    expect(trail.patched('fix', 0)).toBe(false);
  });

  it('true on every replay of a run that took the patch, wherever its later entries are', () => {
    const trail = new ReplayTrail(
      journal([
        ['step', 'a'],
        ['step', 'b', { patches: ['fix'] }],
        ['step', 'c'],
      ]),
    );
    expect(trail.patched('fix', 1)).toBe(true);
    expect(trail.patched('other', 1)).toBe(false);
  });

  it('false for a run that started before marks existed', () => {
    const old = new ReplayTrail(new Map([['step#a', { value: 1, at: AT }]]));
    expect(old.patched('fix', 5)).toBe(false);
  });
});

describe('describeDivergence', () => {
  it('names the position, both calls and both versions', () => {
    const text = describeDivergence(
      { position: 1, recorded: { kind: 'step', name: 'b', version: 'v1' }, called: { kind: 'step', name: 'b2' } },
      'v2',
    );
    expect(text).toBe(
      'position 1: the journal recorded step "b" (version v1); this code called step "b2" (version v2)',
    );
    expect(describeDivergence({ position: 2, recorded: { kind: 'step', name: 'c' } })).toBe(
      'position 2: the journal recorded step "c"; this code ended the run without reaching it',
    );
  });
});
