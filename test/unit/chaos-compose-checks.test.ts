/**
 * Invariants 21 to 23 of the system chaos run (test/chaos/system-compose.ts) on made-up
 * histories, and the plan of its units: invokes, event waits and batch items.
 */
import { describe, expect, it } from 'vitest';
import type { Job } from '../../shared/core/job';
import {
  BATCH_TYPE,
  type BatchItemsInput,
  COMPOSE_BATCH,
  COMPOSE_TYPE,
  checkBatchItems,
  checkEventWaits,
  checkInvokes,
  type EventWaitsInput,
  type InvokeRecord,
  type InvokesInput,
  type PlannedComposition,
  planCompositions,
} from '../chaos/system-compose';
import type { PlannedJob } from '../chaos/system-plan';

const T0 = Date.parse('2026-12-01T10:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

function stored(id: string, over: Partial<Job> = {}): Job {
  return {
    id,
    type: 'sys-a',
    state: 'succeeded',
    payload: {},
    payloadHash: 'h',
    attempts: 1,
    maxAttempts: 3,
    createdAt: iso(T0),
    updatedAt: iso(T0 + 1_000),
    runAt: iso(T0),
    finishedAt: iso(T0 + 1_000),
    leaseToken: 1,
    errors: [],
    ...over,
  };
}

const planned = (id: string, overrides: Partial<PlannedJob> = {}): PlannedJob => ({
  id,
  type: 'sys-a',
  via: 'single',
  timing: 'now',
  behaviour: 'succeed',
  backoffKind: 'short',
  backoff: { kind: 'constant', delayMs: 900 },
  payload: { sleepMs: 10 },
  maxAttempts: 5,
  duplicates: [1_000],
  ...overrides,
});

describe('invariant 21: each invoked child is created once per name and ends; its parent resumes after and sees its outcome', () => {
  const unit: PlannedComposition = {
    jobId: 'p1',
    kind: 'invoke',
    children: [
      { name: 'k0', tag: 'p1|k0', fails: false, payload: { sleepMs: 20, tag: 'p1|k0' } },
      { name: 'k1', tag: 'p1|k1', fails: true, payload: { alwaysFail: true, tag: 'p1|k1' } },
    ],
  };
  // its result read from its item, keys in another order than the parent's journal gave them
  const k0 = stored('p1.k0', {
    payload: { tag: 'p1|k0' },
    result: { tag: 'p1|k0', attempt: 1 },
    finishedAt: iso(T0 + 2_000),
  });
  const k1 = stored('p1.k1', { payload: { tag: 'p1|k1' }, state: 'failed', attempts: 3, finishedAt: iso(T0 + 3_000) });
  // real ms: the children's executions end at 2,000 and 3,000; the parent resumes at 5,000
  const record = (over: Partial<InvokeRecord['resumes'][number]> = {}): InvokeRecord => ({
    reached: 500,
    resumes: [
      {
        startedAt: 5_000,
        drivenAt: T0 + 4_000,
        outcomes: {
          k0: { ok: true, result: { attempt: 1, tag: 'p1|k0' } },
          k1: { ok: false, error: 'InvokedJobFailedError', childId: 'p1.k1', childState: 'failed' },
        },
        ...over,
      },
    ],
  });
  function input(overrides: Partial<InvokesInput> = {}): InvokesInput {
    return {
      planned: [unit],
      records: new Map([['p1', record()]]),
      stored: new Map([
        ['p1', stored('p1', { type: COMPOSE_TYPE, finishedAt: iso(T0 + 5_000) })],
        ['p1.k0', k0],
        ['p1.k1', k1],
      ]),
      executions: new Map([
        ['p1.k0', [{ startedAt: 1_000, endedAt: 2_000 }]],
        [
          'p1.k1',
          [
            { startedAt: 1_000, endedAt: 1_100 },
            { startedAt: 2_000, endedAt: 3_000 },
          ],
        ],
      ]),
      maxSkewMs: 1_000,
      finalNow: T0 + 3_600_000,
      ...overrides,
    };
  }
  const details = (i: InvokesInput) => checkInvokes(i).violations.map((v) => v.detail);

  it('holds when each child is stored once, ended, and its outcome was seen after it ended', () => {
    expect(checkInvokes(input())).toEqual({ checked: 2, violations: [] });
    // a replay that got the same recorded outcomes holds too
    const twice = record();
    twice.resumes.push({ ...(twice.resumes[0] as InvokeRecord['resumes'][number]), startedAt: 9_000 });
    expect(details(input({ records: new Map([['p1', twice]]) }))).toEqual([]);
  });

  it('checks nothing of a parent that never reached its invokes', () => {
    expect(checkInvokes(input({ records: new Map(), stored: new Map() }))).toEqual({ checked: 0, violations: [] });
  });

  it('is violated by a child made twice for one name, or never made', () => {
    const twice = input();
    (twice.stored as Map<string, Job>).set('inv.other', stored('inv.other', { payload: { tag: 'p1|k0' } }));
    expect(details(twice)).toEqual([expect.stringContaining('invoke "k0" made 2 jobs')]);
    const none = input();
    (none.stored as Map<string, Job>).delete('p1.k1');
    expect(details(none)).toEqual([expect.stringContaining('invoke "k1" was called, but no job of it is stored')]);
  });

  it('is violated by a child left running at the end (it did not run as any job does)', () => {
    const stuck = input();
    (stuck.stored as Map<string, Job>).set('p1.k1', { ...k1, state: 'queued', finishedAt: undefined });
    const out = details(stuck);
    expect(out).toContain('its child p1.k1 ("k1") is queued at the end (attempts 3)');
    // and the parent resumed past it
    expect(out).toContainEqual(expect.stringContaining('past invoke "k1", whose job p1.k1 is queued'));
  });

  it('is violated by a parent that resumed while a child still ran, or before it ended', () => {
    const running = input({
      executions: new Map([
        ['p1.k0', [{ startedAt: 1_000, endedAt: 6_000 }]],
        ['p1.k1', [{ startedAt: 1_000, endedAt: 3_000 }]],
      ]),
    });
    expect(details(running)).toEqual([expect.stringContaining('resumed while its child p1.k0 ("k0") still ran')]);
    const early = input({ records: new Map([['p1', record({ drivenAt: T0 - 5_000 })]]) });
    expect(details(early)).toEqual([
      expect.stringContaining('before its child p1.k0 ("k0") ended'),
      expect.stringContaining('before its child p1.k1 ("k1") ended'),
    ]);
  });

  it("is violated by an outcome that is not the child's: another result, a success of a failed child, another id", () => {
    const other = record();
    const first = other.resumes[0] as InvokeRecord['resumes'][number];
    first.outcomes.k0 = { ok: true, result: { attempt: 2, tag: 'p1|k0' } };
    first.outcomes.k1 = { ok: true, result: null };
    const out = details(input({ records: new Map([['p1', other]]) }));
    expect(out).toEqual([
      expect.stringContaining('not its stored result'),
      expect.stringContaining('not an InvokedJobFailedError for p1.k1 ended failed'),
    ]);
    const wrongId = record();
    (wrongId.resumes[0] as InvokeRecord['resumes'][number]).outcomes.k1 = {
      ok: false,
      error: 'InvokedJobFailedError',
      childId: 'p1.k0',
      childState: 'failed',
    };
    expect(details(input({ records: new Map([['p1', wrongId]]) }))).toHaveLength(1);
  });

  it('is violated by a parent that succeeded without getting past its invokes', () => {
    expect(details(input({ records: new Map([['p1', { reached: 500, resumes: [] }]]) }))).toEqual([
      'succeeded, but no execution of it got past its invokes',
    ]);
  });
});

describe('invariant 22: a waitForEvent returns a matching event sent after its job was created, or times out', () => {
  const unit: PlannedComposition = {
    jobId: 'w1',
    kind: 'wait',
    wait: { timeoutMs: 3_600_000, matched: true, afterMs: 0 },
  };
  function input(overrides: Partial<EventWaitsInput> = {}): EventWaitsInput {
    return {
      planned: [unit],
      records: new Map([
        [
          'w1',
          { reached: T0 + 500, timeoutMs: 3_600_000, returns: [{ id: 'a.w1', data: { key: 'w1', token: 'after' } }] },
        ],
      ]),
      sent: new Map([
        ['b.w1', { key: 'w1', firstTriedAt: T0 - 200, answeredAt: T0 - 100 }],
        ['d.w1', { key: 'w1~other', firstTriedAt: T0 + 100, answeredAt: T0 + 150 }],
        ['a.w1', { key: 'w1', firstTriedAt: T0 + 200, answeredAt: T0 + 300 }],
      ]),
      stored: new Map([['w1', stored('w1', { type: COMPOSE_TYPE })]]),
      marginMs: 3_000,
      ...overrides,
    };
  }
  const details = (i: EventWaitsInput) => checkEventWaits(i).violations.map((v) => v.detail);
  const returning = (value: { id: string; data: unknown } | null, ...more: ({ id: string; data: unknown } | null)[]) =>
    new Map([['w1', { reached: T0 + 500, timeoutMs: 3_600_000, returns: [value, ...more] }]]);

  it('holds when the wait returns its event sent after its creation, or times out with none owed', () => {
    expect(checkEventWaits(input())).toEqual({ checked: 1, violations: [] });
    // no event on its key after its creation: the timeout is right
    const sent = new Map(input().sent);
    sent.delete('a.w1');
    expect(details(input({ records: returning(null), sent }))).toEqual([]);
    // an event answered too close to the deadline is not owed
    sent.set('a.w1', { key: 'w1', firstTriedAt: T0 + 3_599_000, answeredAt: T0 + 3_599_500 });
    expect(details(input({ records: returning(null), sent }))).toEqual([]);
  });

  it('checks nothing of a wait that never returned', () => {
    expect(checkEventWaits(input({ records: new Map() })).checked).toBe(0);
  });

  it('is violated by an event sent before the job was created', () => {
    expect(details(input({ records: returning({ id: 'b.w1', data: { key: 'w1', token: 'before' } }) }))).toEqual([
      expect.stringContaining('before the job was created'),
    ]);
  });

  it('is violated by a non-matching event, or one the run never sent', () => {
    expect(details(input({ records: returning({ id: 'd.w1', data: { key: 'w1~other', token: 'decoy' } }) }))).toEqual([
      expect.stringContaining('on key w1~other, not its own'),
    ]);
    expect(details(input({ records: returning({ id: 'x.w1', data: { key: 'w1', token: 'x' } }) }))).toEqual([
      expect.stringContaining('which the run never sent'),
    ]);
  });

  it('is violated by a timeout while an event sent after its creation was owed to it (lost)', () => {
    expect(details(input({ records: returning(null) }))).toEqual([
      expect.stringContaining('its wait timed out (reached'),
    ]);
  });

  it('is violated by a replay that returned another event than the first', () => {
    const first = { id: 'a.w1', data: { key: 'w1', token: 'after' } };
    expect(details(input({ records: returning(first, null) }))).toEqual([expect.stringContaining('on a replay')]);
  });
});

describe('invariant 23: a batch item never runs again after its outcome was recorded, and each outcome is recorded once', () => {
  const unit: PlannedComposition = { jobId: 'b1', kind: 'batch', failFirst: true };
  function input(overrides: Partial<BatchItemsInput> = {}): BatchItemsInput {
    return {
      planned: [unit],
      runs: new Map([
        [
          'b1',
          [
            { attempt: 1, startedAt: 1_000, answered: 'fail' as const },
            { attempt: 2, startedAt: 3_000, answered: 'ok' as const },
          ],
        ],
      ]),
      writes: new Map([
        [
          'b1',
          [
            { kind: 'retry' as const, token: 1, at: 1_100 },
            { kind: 'succeed' as const, token: 2, at: 3_100 },
            // the same write, its lost answer tried again: still one outcome
            { kind: 'succeed' as const, token: 2, at: 3_300 },
          ],
        ],
      ]),
      stored: new Map([['b1', stored('b1', { type: BATCH_TYPE, attempts: 2, leaseToken: 2 })]]),
      ...overrides,
    };
  }
  const details = (i: BatchItemsInput) => checkBatchItems(i).violations.map((v) => v.detail);

  it('holds when a failed item ran again alone and then succeeded once', () => {
    expect(checkBatchItems(input())).toEqual({ checked: 1, violations: [] });
  });

  it('checks nothing of an item the handler never ran', () => {
    expect(checkBatchItems(input({ runs: new Map() })).checked).toBe(0);
  });

  it('is violated by a run after the item succeeded', () => {
    const runs = new Map(input().runs);
    runs.set('b1', [...(runs.get('b1') ?? []), { attempt: 3, startedAt: 4_000, answered: 'ok' as const }]);
    expect(details(input({ runs }))).toEqual([
      expect.stringContaining('ran again (attempt 3, 1 time(s)) after its succeed'),
    ]);
  });

  it('is violated by two outcomes of one attempt, or an end recorded by two attempts', () => {
    const both = new Map([
      [
        'b1',
        [
          { kind: 'retry' as const, token: 1, at: 1_100 },
          { kind: 'succeed' as const, token: 1, at: 1_200 },
          { kind: 'succeed' as const, token: 2, at: 3_100 },
        ],
      ],
    ]);
    const out = details(input({ writes: both }));
    expect(out).toContain('its attempt of token 1 recorded retry and succeed');
    expect(out).toContain('its end was recorded by 2 attempts (tokens 1, 2)');
  });

  it('is violated when the stored job is not in the state its recorded end wrote', () => {
    const stuck = new Map([['b1', stored('b1', { type: BATCH_TYPE, state: 'running' })]]);
    expect(details(input({ stored: stuck }))).toEqual(['its succeed was recorded, but it is running at the end']);
  });
});

describe('the plan of the composition units', () => {
  it('turns a share of eligible jobs of the child type into parents, waiters and batch items in turn', () => {
    const jobs = Array.from({ length: 400 }, (_, i) => planned(`sys-${String(i).padStart(5, '0')}-x`));
    const units = planCompositions(jobs, { childType: 'sys-a', share: 0.1, min: 6 });
    // about 10 % of 400, chosen from the ids
    expect(units.length).toBeGreaterThan(20);
    expect(units.length).toBeLessThan(70);
    expect(jobs).toHaveLength(400);
    units.forEach((unit, i) => {
      expect(unit.kind).toBe(['invoke', 'wait', 'batch'][i % 3]);
      const job = jobs.find((j) => j.id === unit.jobId);
      expect(job?.type).toBe(unit.kind === 'batch' ? BATCH_TYPE : COMPOSE_TYPE);
      expect([job?.maxAttempts, job?.backoff]).toEqual([3, { kind: 'constant', delayMs: 300 }]);
    });
    const invokes = units.filter((u) => u.kind === 'invoke');
    for (const unit of invokes) {
      expect(unit.children?.length).toBeGreaterThanOrEqual(2);
      expect(unit.children?.map((c) => [c.name, c.tag, c.payload.tag, c.fails])).toEqual(
        (unit.children ?? []).map((_, i) => [`k${i}`, `${unit.jobId}|k${i}`, `${unit.jobId}|k${i}`, i === 1]),
      );
    }
    // every second parent's first child is killed on its first attempt
    expect(invokes.filter((u) => u.children?.[0]?.payload.killOnAttempts !== undefined)).toHaveLength(
      Math.floor(invokes.length / 2),
    );
    const waits = units.filter((u) => u.kind === 'wait');
    expect(waits.filter((u) => u.wait?.matched).length).toBe(Math.ceil(waits.length / 2));
    expect(units.filter((u) => u.kind === 'batch' && u.failFirst).length).toBeGreaterThan(0);
    // the batch items are enqueued in one batch call (a burst), so that one handler call gets several
    const batchJobs = units.filter((u) => u.kind === 'batch').map((u) => jobs.find((j) => j.id === u.jobId));
    expect(new Set(batchJobs.map((j) => j?.together))).toEqual(new Set([COMPOSE_BATCH]));
    expect(jobs.filter((j) => j.together === COMPOSE_BATCH)).toHaveLength(batchJobs.length);
  });

  it('takes at least `min` units, and leaves alone jobs anything else shapes', () => {
    const jobs = Array.from({ length: 30 }, (_, i) => planned(`j${i}`));
    expect(planCompositions(jobs, { childType: 'sys-a', share: 0, min: 6 })).toHaveLength(6);
    const shaped = [
      planned('c', { control: { cancelAfterMs: 10 } }),
      planned('e', { via: 'event', event: { name: 'sys.probe', id: 'e-1' } }),
      planned('k', { payload: { killOnAttempts: [1] } }),
      planned('s', { payload: { steps: 2 } }),
      planned('t', { payload: { tag: 'key-0' } }),
      planned('f', { flow: 'flow-1' }),
      planned('b', { type: 'sys-b' }),
      planned('y', { behaviour: 'flaky' }),
    ];
    expect(planCompositions(shaped, { childType: 'sys-a', share: 1, min: 6 })).toEqual([]);
    expect(planCompositions(jobs, { childType: 'sys-a', share: 0, min: 0 })).toEqual([]);
  });

  it('chooses from the ids alone (the same jobs give the same units), and changes no other job', () => {
    const make = () => Array.from({ length: 200 }, (_, i) => planned(`sys-${i}`, i % 7 === 0 ? { type: 'sys-b' } : {}));
    const jobs = make();
    const units = planCompositions(jobs, { childType: 'sys-a', share: 0.05, min: 6 });
    expect(units).toEqual(planCompositions(make(), { childType: 'sys-a', share: 0.05, min: 6 }));
    const chosen = new Set(units.map((u) => u.jobId));
    const untouched = make().filter((j) => !chosen.has(j.id));
    expect(jobs.filter((j) => !chosen.has(j.id))).toEqual(untouched);
  });
});
