/**
 * The system chaos run's workflow invariants (13 to 16 in test/chaos/system-checks.ts, checked by
 * `checkWorkflows` in test/chaos/system-workflows.ts) on made-up records: they hold for a
 * workflow that slept, got its signal and ended, and each is violated by each way of breaking it.
 */
import { describe, expect, it } from 'vitest';
import type { Job } from '../../shared/core/job';
import {
  type CycleRecord,
  checkWorkflows,
  noWorkflowStats,
  type PlannedWorkflow,
  type SignalRecord,
  WorkflowRecords,
} from '../chaos/system-workflows';

const T0 = Date.parse('2026-11-23T12:00:00.000Z');
const MIN = 60_000;
const HOUR = 60 * MIN;
const iso = (t: number) => new Date(t).toISOString();

function planned(over: Partial<PlannedWorkflow> = {}): PlannedWorkflow {
  return {
    id: 'w',
    round: 1,
    kind: 'signal-during',
    payload: { nonce: 'n1', steps: 1, sleepMs: 5000, waitMs: 2 * HOUR },
    signal: 'during',
    token: 't1',
    via: 'single',
    ...over,
  };
}

function stored(over: Partial<Job> = {}, nonce = 'n1'): Job {
  return {
    id: 'w',
    type: 'sys-wf',
    state: 'succeeded',
    payload: { nonce },
    payloadHash: 'h',
    attempts: 1,
    maxAttempts: 8,
    createdAt: iso(T0),
    updatedAt: iso(T0 + 10_000),
    runAt: iso(T0),
    finishedAt: iso(T0 + 10_000),
    leaseToken: 3,
    errors: [],
    ...over,
  };
}

/** Cycles of the run: jumps of 3 h from T0 + 5 min on, each settled 2 min after it landed. */
const cycles: CycleRecord[] = [0, 1, 2, 3].map((i) => {
  const from = T0 + 5 * MIN + i * (3 * HOUR + 2 * MIN);
  return { from, to: from + 3 * HOUR, settledAt: from + 3 * HOUR + 2 * MIN };
});

function check(input: {
  jobs?: PlannedWorkflow[];
  records?: (r: WorkflowRecords) => void;
  signal?: SignalRecord;
  stored?: Job[];
  killedCreates?: string[];
  acknowledged?: string[];
  abandonedFlows?: string[];
}) {
  const records = new WorkflowRecords();
  input.records?.(records);
  const signals = new Map<string, SignalRecord>(input.signal ? [['w|n1', input.signal]] : []);
  const jobs = input.stored ?? [stored()];
  return checkWorkflows({
    planned: input.jobs ?? [planned()],
    records,
    actors: {
      signals,
      killedCreates: new Set(input.killedCreates ?? []),
      acknowledged: new Set(input.acknowledged ?? []),
      abandonedFlows: new Set(input.abandonedFlows ?? []),
      stats: noWorkflowStats(),
    },
    stored: new Map(jobs.map((j) => [j.id, j])),
    storedBeforeReuse: new Map(),
    cycles,
    maxSkewMs: 1000,
    supervisorIntervalMs: 2000,
    finalNow: T0 + 13 * HOUR,
  });
}

/** A workflow that ran its step, slept 5 s, waited, and got its signal 1 s after it was sent. */
function healthy(r: WorkflowRecords, got: { nonce: string; token: string } | null = { nonce: 'n1', token: 't1' }) {
  const w = r.of('w', 'n1');
  w.executions = 3;
  w.firstStart = T0;
  w.sleep = { reached: T0 + 100, ms: 5000, returned: T0 + 5300 };
  w.wait = { reached: T0 + 5400, realReached: 0, timeoutMs: 2 * HOUR, returned: T0 + 7000, got };
}
const answered: SignalRecord = { outcome: 'answered', sentAt: T0 + 6000, late: false, resumed: true };
const violated = (result: ReturnType<typeof checkWorkflows>) =>
  result.violations.map((v) => `${v.invariant}: ${v.detail}`);

describe('chaos workflow invariants', () => {
  it('hold for a workflow that slept, got its signal during its wait and ended', () => {
    const result = check({ records: (r) => healthy(r), signal: answered });
    expect(violated(result)).toEqual([]);
    expect(result.checked).toEqual({ parents: 0, identity: 3, signals: 1, resume: 1 });
  });

  describe('14: no job reads an entry of another incarnation', () => {
    it('is violated by a step, a wait or a parent that returned another nonce', () => {
      const result = check({
        records: (r) => {
          healthy(r);
          r.of('w', 'n1').foreign.push('step s0 returned {"nonce":"n0"}');
        },
        signal: answered,
      });
      expect(violated(result)).toEqual(['identity: round 1 (signal-during): step s0 returned {"nonce":"n0"}']);
    });

    it('is violated by a sleep that was over sooner than its length after this incarnation first reached it', () => {
      const result = check({
        records: (r) => {
          healthy(r);
          const w = r.of('w', 'n1');
          // a sleep of 5 s (longer than the skews can blur) over at once: an old incarnation's
          w.sleep = { reached: T0 + 100, ms: 5000, returned: T0 + 150 };
        },
        signal: answered,
      });
      expect(violated(result)).toHaveLength(1);
      expect(violated(result)[0]).toMatch(/^identity: round 1: its sleep of 5000 ms/);
    });

    it('is violated by a first signal refused as signal_exists', () => {
      const result = check({
        records: (r) => healthy(r, null),
        signal: { outcome: 'refused', code: 'signal_exists', sentAt: T0 + 6000 },
      });
      expect(violated(result)).toEqual(['identity: round 1: its only signal was refused as signal_exists']);
    });
  });

  describe('15: a signal accepted is returned, or answered late', () => {
    it('is violated by a signal answered not late that its wait did not return', () => {
      const result = check({ records: (r) => healthy(r, null), signal: answered });
      expect(violated(result)).toEqual([
        'signals: round 1 (signal-during): answered resumed, but its wait returned null',
      ]);
    });

    it('is violated by a signal answered late that its wait returned', () => {
      const result = check({ records: (r) => healthy(r), signal: { ...answered, late: true, resumed: false } });
      expect(violated(result)).toEqual([
        'signals: round 1 (signal-during): answered late, but its wait returned {"nonce":"n1","token":"t1"}',
      ]);
    });

    it('holds for a late answer whose wait returned its timeout', () => {
      const result = check({ records: (r) => healthy(r, null), signal: { ...answered, late: true, resumed: false } });
      expect(violated(result)).toEqual([]);
    });

    it('is violated by a signal stored by a call that died and never returned by the wait', () => {
      const result = check({
        jobs: [planned({ kill: 'signal-after-inbox' })],
        records: (r) => healthy(r, null),
        signal: { outcome: 'killed', sentAt: T0 + 6000 },
      });
      expect(violated(result)).toEqual([
        'signals: round 1 (signal-during): stored by a call that died, but its wait returned null',
      ]);
    });
  });

  describe('16: every waiting job resumes within its bound, and every workflow written ends', () => {
    it('is violated by a stored signal whose wait returned only at its deadline, hours later', () => {
      const result = check({
        records: (r) => {
          healthy(r);
          const w = r.of('w', 'n1');
          // the wait's deadline (2 h), met after the second jump: not within 11 min of the signal
          if (w.wait) w.wait.returned = (cycles[1]?.settledAt ?? 0) + MIN;
        },
        signal: answered,
      });
      expect(violated(result)).toHaveLength(1);
      expect(violated(result)[0]).toMatch(/^resume: round 1: waited from .* signal stored at .* resumed .* bound/);
    });

    it('is violated by a sleep that never resumed, once its bound has passed', () => {
      const result = check({
        records: (r) => {
          healthy(r);
          const w = r.of('w', 'n1');
          if (w.sleep) delete w.sleep.returned;
        },
        signal: answered,
        stored: [stored({ state: 'waiting', runAt: iso(T0 + 5100), updatedAt: iso(T0 + 100), finishedAt: undefined })],
      });
      expect(violated(result).map((v) => v.split(':')[0])).toEqual(['resume', 'resume']);
      expect(violated(result)[0]).toMatch(/waiting at the end/);
      expect(violated(result)[1]).toMatch(/slept from .* resumed never/);
    });

    it('holds for a job still waiting at the end whose wait is not overdue yet', () => {
      const result = check({
        records: (r) => {
          const w = r.of('w', 'n1');
          w.executions = 1;
          w.firstStart = T0 + 12 * HOUR;
          w.wait = { reached: T0 + 12 * HOUR, realReached: 0, timeoutMs: 2 * HOUR };
        },
        jobs: [planned({ payload: { nonce: 'n1', steps: 0, waitMs: 2 * HOUR }, signal: 'none' })],
        stored: [
          stored({
            state: 'waiting',
            runAt: iso(T0 + 14 * HOUR),
            updatedAt: iso(T0 + 12 * HOUR),
            finishedAt: undefined,
          }),
        ],
      });
      expect(violated(result)).toEqual([]);
    });

    it('is violated by an acknowledged job (with a signal or without), or a child whose enqueue died after its create, that is missing', () => {
      expect(violated(check({ records: (r) => healthy(r), signal: answered, stored: [] }))).toEqual([
        'resume: round 1 (signal-during): never written, or lost',
      ]);
      const timeout = planned({ kind: 'timeout', signal: 'none', payload: { nonce: 'n1', steps: 1, waitMs: HOUR } });
      expect(violated(check({ jobs: [timeout], stored: [], acknowledged: ['w|n1'] }))).toEqual([
        'resume: round 1 (timeout): never written, or lost',
      ]);
      const child = planned({
        id: 'c',
        kind: 'kill-enqueue-after-create',
        via: 'child',
        signal: 'none',
        kill: 'enqueue-after-create',
        payload: { nonce: 'n1', steps: 1 },
      });
      expect(violated(check({ jobs: [child], stored: [], killedCreates: ['c|n1'] }))).toEqual([
        'resume: round 1 (kill-enqueue-after-create): never written, or lost',
      ]);
    });

    it('is violated by a workflow that failed, and by the second level of an abandoned flow that exists', () => {
      expect(
        violated(check({ records: (r) => healthy(r), signal: answered, stored: [stored({ state: 'failed' })] })),
      ).toEqual(['resume: round 1 (signal-during): failed at the end (attempts 1, resumes 0)']);
      const flow = { id: 'f', replay: false };
      const b = planned({
        id: 'w',
        kind: 'kill-flow-abandoned',
        via: 'flow',
        flow,
        signal: 'none',
        payload: { nonce: 'n1', steps: 1, parents: { a: 'na' } },
      });
      expect(violated(check({ jobs: [b], abandonedFlows: ['f'] }))).toEqual([
        'resume: the second level of abandoned flow f exists (succeeded)',
      ]);
    });
  });

  describe('13: a child starts after its parent ended', () => {
    const parent = planned({ id: 'p', kind: 'parent-child', signal: 'none', payload: { nonce: 'np', steps: 1 } });
    const child = planned({
      id: 'w',
      kind: 'parent-child',
      via: 'child',
      signal: 'none',
      payload: { nonce: 'n1', steps: 1, parents: { p: 'np' } },
    });
    const parentJob = stored({ id: 'p', finishedAt: iso(T0 + 5000) }, 'np');

    it('holds for a child that started after its parent ended, within the skew', () => {
      const result = check({
        jobs: [parent, child],
        records: (r) => {
          r.of('w', 'n1').firstStart = T0 + 4500;
        },
        stored: [parentJob, stored()],
      });
      expect(violated(result)).toEqual([]);
      expect(result.checked.parents).toBe(1);
    });

    it('is violated by a child that started before its parent ended', () => {
      const result = check({
        jobs: [parent, child],
        records: (r) => {
          r.of('w', 'n1').firstStart = T0 + 1000;
        },
        stored: [parentJob, stored()],
      });
      expect(violated(result)).toHaveLength(1);
      expect(violated(result)[0]).toMatch(/^parents: round 1: started .* its parent p ended/);
    });
  });
});
