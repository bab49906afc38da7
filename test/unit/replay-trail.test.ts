/**
 * The replay comparison (shared/core/replay.ts): each call a replay makes against the positions,
 * names and kinds its journal recorded, the end of a run that no longer reaches a recorded call,
 * and what `ctx.patched` answers.
 */
import { describe, expect, it } from 'vitest';
import type { EntryMark, JournalEntry } from '../../shared/core/journal';
import { type CallName, describeDivergence, ReplayTrail } from '../../shared/core/replay';

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

/** The first divergence of a run that makes `calls` in turn (each quiet unless listed in `racing`) against `trail`. */
function replay(trail: ReplayTrail, calls: [CallName['kind'], string][], racing: number[] = []) {
  const began: string[] = [];
  for (const [position, [kind, name]] of calls.entries()) {
    began.push(`${kind}#${name}`);
    const divergence = trail.check({ kind, name }, position, !racing.includes(position), began);
    if (divergence) return divergence;
  }
  return undefined;
}

describe('ReplayTrail.check', () => {
  const recorded = () =>
    new ReplayTrail(
      journal([
        ['step', 'a'],
        ['step', 'b'],
        ['sleep', 'nap'],
        ['step', 'c'],
      ]),
    );

  it('an unchanged run agrees at every position, and goes on past the journal with new calls', () => {
    expect(
      replay(recorded(), [
        ['step', 'a'],
        ['step', 'b'],
        ['sleep', 'nap'],
        ['step', 'c'],
        ['step', 'd'],
      ]),
    ).toBeUndefined();
  });

  it('a renamed step: a new name where the journal recorded another', () => {
    expect(
      replay(recorded(), [
        ['step', 'a'],
        ['step', 'b2'],
      ]),
    ).toEqual({
      position: 1,
      recorded: { kind: 'step', name: 'b', version: 'v1' },
      called: { kind: 'step', name: 'b2' },
    });
  });

  it('a removed step: the next recorded call comes one position early', () => {
    expect(
      replay(recorded(), [
        ['step', 'a'],
        ['sleep', 'nap'],
      ]),
    ).toEqual({
      position: 1,
      recorded: { kind: 'step', name: 'b', version: 'v1' },
      called: { kind: 'sleep', name: 'nap' },
      recordedAt: 2,
    });
  });

  it('a reordered step: a recorded call at another position', () => {
    expect(
      replay(recorded(), [
        ['step', 'a'],
        ['step', 'b'],
        ['step', 'c'],
      ]),
    ).toMatchObject({ position: 2, recorded: { kind: 'sleep', name: 'nap' }, recordedAt: 3 });
    expect(
      replay(recorded(), [
        ['step', 'b'],
        ['step', 'a'],
      ]),
    ).toMatchObject({ position: 0, recorded: { kind: 'step', name: 'a' }, recordedAt: 1 });
  });

  it('a step that became a sleep of the same name is a different call', () => {
    expect(
      replay(recorded(), [
        ['step', 'a'],
        ['sleep', 'b'],
      ]),
    ).toMatchObject({ recorded: { kind: 'step', name: 'b' }, called: { kind: 'sleep', name: 'b' } });
  });

  it('a new step inserted before recorded ones diverges where it is inserted', () => {
    expect(
      replay(recorded(), [
        ['step', 'a'],
        ['step', 'new'],
      ]),
    ).toMatchObject({ position: 1, recorded: { name: 'b' }, called: { name: 'new' } });
  });

  it('calls begun while another is in flight are compared by name only (their order may race)', () => {
    expect(
      replay(
        recorded(),
        [
          ['step', 'a'],
          ['step', 'c'],
        ],
        [1],
      ),
    ).toBeUndefined();
  });

  it('racing chains that started in another order: no divergence, and the next barrier is compared again', () => {
    // recorded: chain one ran s1 then s2, chain two s3 then s4; s3 finished first, so s4 began
    // before s2 (positions 0 s1, 1 s3, 2 s4, 3 s2); then a quiet step "after"
    const raced = () =>
      new ReplayTrail(
        journal([
          ['step', 's1'],
          ['step', 's3'],
          ['step', 's4'],
          ['step', 's2'],
          ['step', 'after'],
        ]),
      );
    // the replay begins s2 before s4, and s4 when nothing else is in flight: not a barrier, as
    // the calls before it (s1, s3, s2) are not the ones the journal recorded before position 3
    const calls: [CallName['kind'], string][] = [
      ['step', 's1'],
      ['step', 's3'],
      ['step', 's2'],
      ['step', 's4'],
    ];
    expect(replay(raced(), [...calls, ['step', 'after']], [1, 2])).toBeUndefined();
    // the quiet call after the race is a barrier: a renamed one is caught
    expect(replay(raced(), [...calls, ['step', 'after-2']], [1, 2])).toMatchObject({
      position: 4,
      recorded: { name: 'after' },
      called: { name: 'after-2' },
    });
  });

  it('a signal wait is one call whether its deadline or its outcome was recorded', () => {
    const waits = () =>
      new ReplayTrail(
        journal([
          ['step', 'a'],
          ['wait', 'approval'],
          ['signal', 'approval', { seq: 1 }],
        ]),
      );
    expect(
      replay(waits(), [
        ['step', 'a'],
        ['wait', 'approval'],
      ]),
    ).toBeUndefined();
    expect(
      replay(waits(), [
        ['step', 'a'],
        ['step', 'approval'],
      ]),
    ).toMatchObject({ recorded: { kind: 'wait', name: 'approval' } });
  });

  it('entries without a mark (recorded before marks, or by the API) are compared by name only', () => {
    const old = new ReplayTrail(new Map([['step#a', { value: 1, at: AT }]]));
    expect(
      replay(old, [
        ['step', 'z'],
        ['step', 'a'],
      ]),
    ).toBeUndefined();
    expect(old.unmarked).toBe(true);
  });

  it('a call recorded without a mark stands for an unmarked position: the calls after it are still compared', () => {
    // a wait whose outcome the API recorded before the wait began (position 1, no mark of its own)
    const entries = journal([
      ['step', 'a'],
      ['step', 'gap'],
      ['step', 'b'],
      ['sleep', 'nap'],
    ]);
    entries.delete('step#gap');
    entries.set('signal#go', { value: { received: AT }, at: AT });
    const trail = new ReplayTrail(entries);
    const run = (third: string) =>
      replay(trail, [
        ['step', 'a'],
        ['wait', 'go'],
        ['step', third],
        ['sleep', 'nap'],
      ]);
    expect(run('b')).toBeUndefined();
    expect(run('b2')).toMatchObject({ position: 2, recorded: { name: 'b' }, called: { name: 'b2' } });
    // it cannot stand for a position the journal holds a marked entry at
    const moved = new ReplayTrail(entries);
    expect(
      replay(moved, [
        ['wait', 'go'],
        ['step', 'b'],
      ]),
    ).toBeUndefined();
  });

  it('a position whose recorded call began racing another is no barrier', () => {
    const trail = new ReplayTrail(
      journal([
        ['step', 's1'],
        ['step', 's3', { racing: true }],
        ['step', 's4', { racing: true }],
        ['step', 's2', { racing: true }],
        ['step', 'after'],
      ]),
    );
    // s1 and s3 began at once, then s2 alone (its partners' results came at once on the replay)
    expect(
      replay(
        trail,
        [
          ['step', 's1'],
          ['step', 's3'],
          ['step', 's2'],
          ['step', 's4'],
          ['step', 'after'],
        ],
        [1, 3],
      ),
    ).toBeUndefined();
    // a quiet call moved onto a position whose recorded call was quiet is still caught
    expect(
      replay(trail, [
        ['step', 'after'],
        ['step', 's1'],
      ]),
    ).toMatchObject({ position: 0, recorded: { name: 's1' }, called: { name: 'after' } });
  });

  it('names the first version of the run', () => {
    expect(recorded().firstVersion).toBe('v1');
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
