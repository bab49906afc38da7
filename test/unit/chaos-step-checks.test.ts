/**
 * The system chaos run's step invariant (12 in test/chaos/system-checks.ts) on made-up records:
 * it holds for a step replayed after a failure, and is violated by each way of breaking it.
 */
import { describe, expect, it } from 'vitest';
import type { Job } from '../../shared/core/job';
import { checkInvariants, INVARIANTS } from '../chaos/system-checks';
import { SystemObserver } from '../chaos/system-observer';
import type { PlannedJob } from '../chaos/system-plan';
import { ProbeTracker } from '../support/probes';

const T0 = Date.parse('2026-11-23T12:00:00.000Z');
const twelve = INVARIANTS[11];
const at = new Date(T0).toISOString();

/** One job of one step (`s0`), its body runs (`[start, end?]`, real ms after T0), and what each execution got. */
function check(input: {
  runs: [number, number | undefined][];
  recorded?: number;
  got?: number[];
  state?: Job['state'];
}) {
  const tracker = new ProbeTracker();
  const runs = input.runs.map(([start, end]) => {
    const run = tracker.stepBegin('j', 0);
    run.startedAt = T0 + start;
    if (end !== undefined) run.endedAt = T0 + end;
    return run;
  });
  for (const i of input.got ?? []) tracker.stepResult('j', 0, runs[i]?.id ?? 'none');
  const job: PlannedJob = {
    id: 'j',
    type: 'sys-a',
    via: 'single',
    timing: 'now',
    behaviour: 'flaky',
    backoffKind: 'short',
    backoff: { kind: 'constant', delayMs: 100 },
    payload: { steps: 1 },
    maxAttempts: 3,
    duplicates: [],
  };
  const stored: Job = {
    id: 'j',
    type: 'sys-a',
    state: input.state ?? 'succeeded',
    payload: { steps: 1 },
    payloadHash: 'h',
    attempts: 2,
    maxAttempts: 3,
    createdAt: at,
    updatedAt: at,
    runAt: at,
    leaseToken: 2,
    errors: [],
  };
  const steps = new Map<string, Map<string, unknown>>();
  if (input.recorded !== undefined) steps.set('j', new Map([['s0', { by: runs[input.recorded]?.id }]]));
  return checkInvariants({
    jobs: [job],
    schedules: [],
    stored: new Map([['j', stored]]),
    scheduleItems: new Map(),
    dlqBodies: [],
    observer: new SystemObserver(T0),
    tracker,
    faults: [],
    finalNow: T0 + 3600_000,
    slotsHandledBy: T0,
    maxSkewMs: 0,
    steps,
  }).counts[twelve];
}

describe('chaos invariant 12: a recorded step never runs again', () => {
  it('holds for one run replayed by a later execution, and for a run whose result was never recorded run again', () => {
    expect(check({ runs: [[0, 5]], recorded: 0, got: [0, 0] })).toEqual({ checked: 1, violated: 0 });
    expect(
      check({
        runs: [
          [0, 5],
          [100, 105],
        ],
        recorded: 1,
        got: [1],
      }),
    ).toEqual({ checked: 1, violated: 0 });
  });

  it('is violated by a run after the recorded run completed, a result naming no completed run, another result, or a success without it', () => {
    expect(
      check({
        runs: [
          [0, 5],
          [100, 105],
        ],
        recorded: 0,
        got: [0, 1],
      }).violated,
    ).toBe(1);
    expect(check({ runs: [[0, undefined]], recorded: 0, got: [] }).violated).toBe(1);
    expect(
      check({
        runs: [
          [0, 5],
          [1, 6],
        ],
        recorded: 0,
        got: [1],
      }).violated,
    ).toBe(1);
    expect(check({ runs: [[0, 5]], got: [0] }).violated).toBe(1);
    // a body whose result could not be recorded, in a job that then failed: nothing to hold it to
    expect(check({ runs: [[0, 5]], got: [], state: 'failed' }).violated).toBe(0);
  });
});

describe('chaos invariant 12 across a rerun from a step', () => {
  /**
   * A job of two steps rerun from `s1`: its first series ran s0 (run 0) and s1 (run 1), then was
   * cancelled and rerun; the rerun's series (1) started at 200 ms. `runs` are [step, start, end]
   * (real ms after T0), `got` what each execution got ([step, run index, at]), and `recorded` the
   * run each step's entry names in the series the job reads now.
   */
  function rerunCheck(input: {
    runs: [step: number, start: number, end: number][];
    got: [step: number, run: number, at: number][];
    recorded: [s0: number, s1: number];
    reruns?: number;
    fromStart?: boolean;
  }) {
    const tracker = new ProbeTracker();
    const runs = input.runs.map(([step, start, end]) => {
      const run = tracker.stepBegin('j', step);
      run.startedAt = T0 + start;
      run.endedAt = T0 + end;
      return run;
    });
    for (const [step, run, when] of input.got) {
      tracker.stepResult('j', step, runs[run]?.id ?? 'none');
      const results = tracker.stepResults.get('j') ?? [];
      (results.at(-1) as { at: number }).at = T0 + when;
    }
    const job: PlannedJob = {
      id: 'j',
      type: 'sys-a',
      via: 'single',
      timing: 'now',
      behaviour: 'succeed',
      backoffKind: 'short',
      backoff: { kind: 'constant', delayMs: 100 },
      payload: { steps: 2 },
      maxAttempts: 3,
      duplicates: [],
      control: { cancelAfterMs: 0, retryAfterMs: 0, aim: 'running', rerunFromStep: 's1' },
    };
    const stored: Job = {
      id: 'j',
      type: 'sys-a',
      state: 'succeeded',
      payload: { steps: 2 },
      payloadHash: 'h',
      attempts: 1,
      maxAttempts: 3,
      createdAt: at,
      updatedAt: at,
      runAt: at,
      leaseToken: 3,
      errors: [],
      retries: 1,
      reruns: input.reruns ?? 1,
      journal: 'r1.x',
    };
    const observer = new SystemObserver(T0);
    const start = (series: number, realAt: number) => ({
      attempt: 1,
      series,
      runAt: T0,
      drivenAt: T0 + realAt,
      realAt: T0 + realAt,
      skewMs: 0,
    });
    observer.starts.set('j', [start(0, 0), start(1, 200)]);
    if (input.fromStart) observer.rerunsFromStart.add('j');
    const steps = new Map([
      [
        'j',
        new Map<string, unknown>([
          ['s0', { by: runs[input.recorded[0]]?.id }],
          ['s1', { by: runs[input.recorded[1]]?.id }],
        ]),
      ],
    ]);
    return checkInvariants({
      jobs: [job],
      schedules: [],
      stored: new Map([['j', stored]]),
      scheduleItems: new Map(),
      dlqBodies: [],
      observer,
      tracker,
      faults: [],
      finalNow: T0 + 3600_000,
      slotsHandledBy: T0,
      maxSkewMs: 0,
      steps,
    }).counts[twelve];
  }

  // the first series: s0 by run 0, s1 by run 1, each got once
  const first: [number, number, number][] = [
    [0, 0, 5],
    [1, 6, 10],
  ];
  const firstGot: [number, number, number][] = [
    [0, 0, 5],
    [1, 1, 10],
  ];

  it('holds when the kept step is replayed and the cut one runs once more in the rerun series', () => {
    expect(
      rerunCheck({
        runs: [...first, [1, 206, 210]],
        got: [...firstGot, [0, 0, 205], [1, 2, 210]],
        recorded: [0, 2],
      }),
    ).toEqual({ checked: 2, violated: 0 });
  });

  it('is violated by a kept step run again, or by the rerun series getting a cut step’s old result', () => {
    // s0 was kept (recorded by run 0, copied): its body ran again after the rerun
    expect(
      rerunCheck({
        runs: [...first, [0, 201, 204], [1, 206, 210]],
        got: [...firstGot, [0, 2, 204], [1, 3, 210]],
        recorded: [0, 3],
      }).violated,
    ).toBe(1);
    // s1 was cut: an execution of the rerun series got the first series' result
    expect(
      rerunCheck({
        runs: [...first, [1, 206, 210]],
        got: [...firstGot, [0, 0, 205], [1, 1, 207]],
        recorded: [0, 2],
      }).violated,
    ).toBe(1);
  });

  it('takes a cut step run again as a violation when the job counts no rerun, and lets every step run again after a rerun from the start', () => {
    const records = {
      runs: [...first, [1, 206, 210]] as [number, number, number][],
      got: [...firstGot, [0, 0, 205], [1, 2, 210]] as [number, number, number][],
      recorded: [0, 2] as [number, number],
    };
    // no rerun applied: run 2 ran s1 after run 1 completed, and an execution got run 1's result
    expect(rerunCheck({ ...records, reruns: 0 }).violated).toBe(1);
    // rerun from the start: s0 may run again too, and one that does is no violation
    expect(
      rerunCheck({
        runs: [...first, [0, 201, 204], [1, 206, 210]],
        got: [...firstGot, [0, 2, 204], [1, 3, 210]],
        recorded: [2, 3],
        fromStart: true,
      }),
    ).toEqual({ checked: 2, violated: 0 });
  });
});
