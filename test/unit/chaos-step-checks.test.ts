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
