/**
 * The system chaos run's dependency invariant (13 in test/chaos/system-checks.ts) on made-up
 * records: it holds for a child that ran after its parents and for one a failed parent ended by
 * policy, and is violated by each way of breaking it.
 */
import { describe, expect, it } from 'vitest';
import type { Job } from '../../shared/core/job';
import { checkInvariants, INVARIANTS } from '../chaos/system-checks';
import { SystemObserver } from '../chaos/system-observer';
import type { PlannedJob } from '../chaos/system-plan';
import { ProbeTracker } from '../support/probes';

const T0 = Date.parse('2026-11-23T12:00:00.000Z');
const thirteen = INVARIANTS[12];
const iso = (ms: number) => new Date(ms).toISOString();

function planned(id: string, dependsOn?: PlannedJob['dependsOn']): PlannedJob {
  return {
    id,
    type: 'sys-a',
    via: 'single',
    timing: 'now',
    behaviour: 'succeed',
    backoffKind: 'short',
    backoff: { kind: 'constant', delayMs: 100 },
    payload: {},
    maxAttempts: 3,
    duplicates: [],
    flow: 'f',
    ...(dependsOn ? { dependsOn } : {}),
  };
}

function stored(id: string, state: Job['state'], finishedMs?: number, over: Partial<Job> = {}): Job {
  return {
    id,
    type: 'sys-a',
    state,
    payload: {},
    payloadHash: 'h',
    attempts: 1,
    maxAttempts: 3,
    createdAt: iso(T0),
    updatedAt: iso(T0),
    runAt: iso(T0),
    leaseToken: 1,
    errors: [],
    ...(finishedMs !== undefined ? { finishedAt: iso(T0 + finishedMs) } : {}),
    ...over,
  };
}

/** Parent `p` (state, finish) and child `c` (one edge of `policy`), the child's starts (ms after T0) and final state. */
function check(input: {
  parent: [Job['state'], number | undefined];
  policy: 'fail' | 'ignore' | 'cancel';
  child: Job['state'];
  childStarts?: number[];
  pendingParents?: number;
}) {
  const observer = new SystemObserver(T0);
  for (const id of ['p', 'c']) observer.acknowledge(id, 201, 'flow');
  const starts = (input.childStarts ?? []).map((ms) => ({
    attempt: 1,
    series: 0,
    runAt: T0,
    drivenAt: T0 + ms,
    realAt: T0 + ms,
    skewMs: 0,
  }));
  if (starts.length > 0) observer.starts.set('c', starts);
  const [parentState, parentEnd] = input.parent;
  return checkInvariants({
    jobs: [planned('p'), planned('c', [{ id: 'p', onParentFailure: input.policy }])],
    schedules: [],
    stored: new Map([
      ['p', stored('p', parentState, parentEnd)],
      [
        'c',
        stored(
          'c',
          input.child,
          undefined,
          input.pendingParents !== undefined ? { pendingParents: input.pendingParents } : {},
        ),
      ],
    ]),
    scheduleItems: new Map(),
    dlqBodies: [],
    observer,
    tracker: new ProbeTracker(),
    faults: [],
    finalNow: T0 + 3_600_000,
    slotsHandledBy: T0,
    maxSkewMs: 0,
  }).counts[thirteen];
}

describe('chaos invariant 13: dependencies', () => {
  it('holds for a child that ran after its parent succeeded, and for each policy on a failed parent', () => {
    expect(check({ parent: ['succeeded', 100], policy: 'fail', child: 'succeeded', childStarts: [200] })).toEqual({
      checked: 1,
      violated: 0,
    });
    expect(check({ parent: ['failed', 100], policy: 'fail', child: 'failed' }).violated).toBe(0);
    expect(check({ parent: ['failed', 100], policy: 'cancel', child: 'cancelled' }).violated).toBe(0);
    expect(check({ parent: ['failed', 100], policy: 'ignore', child: 'succeeded', childStarts: [200] }).violated).toBe(
      0,
    );
    // the parent has not ended: the child waits, rightly
    expect(
      check({ parent: ['retrying', undefined], policy: 'fail', child: 'waiting', pendingParents: 1 }).violated,
    ).toBe(0);
  });

  it('is violated by a start before the parent ended, a run or a wrong end despite the policy, and a lost release', () => {
    expect(
      check({ parent: ['retrying', undefined], policy: 'fail', child: 'running', childStarts: [50] }).violated,
    ).toBe(1);
    expect(check({ parent: ['succeeded', 300], policy: 'fail', child: 'succeeded', childStarts: [100] }).violated).toBe(
      1,
    );
    expect(check({ parent: ['failed', 100], policy: 'fail', child: 'succeeded', childStarts: [200] }).violated).toBe(1);
    expect(check({ parent: ['failed', 100], policy: 'fail', child: 'cancelled' }).violated).toBe(1);
    expect(check({ parent: ['failed', 100], policy: 'cancel', child: 'waiting', pendingParents: 1 }).violated).toBe(1);
    expect(check({ parent: ['succeeded', 100], policy: 'fail', child: 'waiting', pendingParents: 1 }).violated).toBe(1);
  });
});
