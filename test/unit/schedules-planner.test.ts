import { describe, expect, it } from 'vitest';
import { JOB_ID_PATTERN } from '../../shared/core/enqueue';
import {
  fireMessage,
  fireMessageSchema,
  fireMessageTemplate,
  isFireMessage,
  runId,
  scheduledTimeText,
} from '../../shared/core/fire-message';
import type { Schedule } from '../../shared/schedules/model';
import {
  applyFire,
  catchUpSlot,
  locateFire,
  overlapDecision,
  previousRun,
  RESERVATION_TIMEOUT_MS,
} from '../../shared/schedules/planner';

const T0 = Date.parse('2026-03-01T12:00:00Z');
const MIN = 60_000;

function everyMinute(overrides: Partial<Schedule> = {}): Schedule {
  return {
    name: 'tick',
    type: 'echo',
    cron: '* * * * *',
    expression: 'cron(* * * * ? *)',
    timezone: 'UTC',
    maxAttempts: 3,
    overlap: 'allow',
    state: 'enabled',
    payloadHash: 'h',
    createdAt: '2026-03-01T00:00:00.000Z',
    updatedAt: '2026-03-01T00:00:00.000Z',
    version: 1,
    nextFireAt: T0,
    skipped: 0,
    missed: 0,
    ...overrides,
  };
}

describe('deterministic run ids', () => {
  it('are <schedule>.<yyyymmddThhmmssZ> of the scheduled time, to the second', () => {
    expect(runId('nightly-report', Date.parse('2026-03-01T02:00:00Z'))).toBe('nightly-report.20260301T020000Z');
    expect(runId('a', Date.parse('2026-03-01T02:00:00.999Z'))).toBe('a.20260301T020000Z');
  });

  it('are the same for every copy of one fire and differ between fires and schedules', () => {
    const t = Date.parse('2026-12-31T23:59:00Z');
    expect(runId('s', t)).toBe(runId('s', t));
    expect(runId('s', t)).not.toBe(runId('s', t + MIN));
    expect(runId('s', t)).not.toBe(runId('t', t));
  });

  it('are valid job ids of at most 64 characters, hashing long names apart', () => {
    const t = Date.parse('2026-03-01T02:00:00Z');
    for (const name of ['x', 'a'.repeat(47), 'a'.repeat(48), 'b'.repeat(64)]) {
      const id = runId(name, t);
      expect(id.length, name).toBeLessThanOrEqual(64);
      expect(JOB_ID_PATTERN.test(id), id).toBe(true);
      expect(id.endsWith('.20260301T020000Z')).toBe(true);
    }
    expect(runId('a'.repeat(47), t)).toBe(`${'a'.repeat(47)}.20260301T020000Z`);
    expect(runId(`${'a'.repeat(63)}1`, t)).not.toBe(runId(`${'a'.repeat(63)}2`, t));
  });
});

describe('the fire message', () => {
  it('is the Scheduler target Input with the scheduled-time placeholder', () => {
    expect(JSON.parse(fireMessageTemplate('nightly', 'echo'))).toEqual({
      v: 1,
      kind: 'fire',
      schedule: 'nightly',
      type: 'echo',
      scheduledTime: '<aws.scheduler.scheduled-time>',
    });
  });

  it('parses as Scheduler fills it in, and the supervisor builds the same', () => {
    const filled = JSON.parse(
      fireMessageTemplate('nightly', 'echo').replace('<aws.scheduler.scheduled-time>', '2026-03-01T02:00:00Z'),
    );
    expect(fireMessageSchema.parse(filled)).toEqual(fireMessage('nightly', 'echo', Date.parse('2026-03-01T02:00:00Z')));
    expect(isFireMessage(filled)).toBe(true);
    expect(isFireMessage({ v: 1, id: 'x', type: 'echo' })).toBe(false);
    expect(scheduledTimeText(Date.parse('2026-03-01T02:00:00.750Z'))).toBe('2026-03-01T02:00:00Z');
  });
});

describe('locateFire', () => {
  it('matches a fire at nextFireAt to that slot', () => {
    expect(locateFire(everyMinute(), T0)).toEqual({ kind: 'due', slot: T0, missed: 0 });
  });

  it('matches a fire a few seconds off the grid to its slot', () => {
    expect(locateFire(everyMinute(), T0 + 5_000)).toEqual({ kind: 'due', slot: T0, missed: 0 });
  });

  it('counts slots that were skipped over as missed', () => {
    expect(locateFire(everyMinute(), T0 + 3 * MIN)).toEqual({ kind: 'due', slot: T0 + 3 * MIN, missed: 3 });
  });

  it('names the run of a repeated fire', () => {
    const schedule = everyMinute({ nextFireAt: T0 + MIN, lastFireAt: T0, lastRunId: runId('tick', T0) });
    expect(locateFire(schedule, T0)).toEqual({ kind: 'stale', runId: runId('tick', T0) });
    expect(locateFire(schedule, T0 - 5 * MIN)).toEqual({ kind: 'stale', runId: runId('tick', T0 - 5 * MIN) });
  });

  it('drops fires of a paused or finished schedule', () => {
    expect(locateFire(everyMinute({ state: 'paused' }), T0).kind).toBe('inactive');
    const finished = everyMinute();
    delete finished.nextFireAt;
    expect(locateFire(finished, T0).kind).toBe('inactive');
  });
});

describe('overlap decisions', () => {
  it.each([
    ['allow', 'none', 'run'],
    ['allow', 'active', 'run'],
    ['allow', 'pending', 'run'],
    ['skip', 'none', 'run'],
    ['skip', 'active', 'skip'],
    ['skip', 'pending', 'skip'],
    ['queue-one', 'none', 'run'],
    ['queue-one', 'active', 'wait'],
    ['queue-one', 'pending', 'skip'],
  ] as const)('%s with the previous run %s → %s', (policy, previous, decision) => {
    expect(overlapDecision(policy, previous)).toBe(decision);
  });
});

describe('previousRun', () => {
  const reserved = { lastRunId: 'tick.x', lastRunReservedAt: T0 };

  it('is none without a previous run, or when it finished', () => {
    expect(previousRun({}, undefined, undefined, T0)).toBe('none');
    for (const state of ['succeeded', 'failed', 'cancelled', 'expired'] as const) {
      expect(previousRun(reserved, { state }, undefined, T0)).toBe('none');
    }
  });

  it('is active while queued, running or retrying', () => {
    for (const state of ['queued', 'running', 'retrying', 'scheduled'] as const) {
      expect(previousRun(reserved, { state }, undefined, T0)).toBe('active');
    }
  });

  it('treats a reserved run not written yet as active, for 12 h (then it was deleted by TTL)', () => {
    expect(previousRun(reserved, undefined, undefined, T0 + 1000)).toBe('active');
    expect(previousRun(reserved, undefined, undefined, T0 + RESERVATION_TIMEOUT_MS)).toBe('none');
  });

  it('is pending when the run waits behind an active one, active once that one finished', () => {
    expect(previousRun(reserved, { state: 'queued', after: 'tick.y' }, { state: 'running' }, T0)).toBe('pending');
    expect(previousRun(reserved, { state: 'queued', after: 'tick.y' }, { state: 'succeeded' }, T0)).toBe('active');
    expect(previousRun(reserved, { state: 'running', after: 'tick.y' }, { state: 'running' }, T0)).toBe('active');
  });
});

describe('applyFire', () => {
  it('run: records the run and the fire, advances to the next slot, bumps the version', () => {
    const { schedule, run } = applyFire(everyMinute(), { slot: T0, missed: 0 }, 'run', T0 + 1000);
    expect(run).toEqual({ id: 'tick.20260301T120000Z', scheduledAt: T0 });
    expect(schedule).toMatchObject({
      version: 2,
      lastFireAt: T0,
      nextFireAt: T0 + MIN,
      lastRunId: 'tick.20260301T120000Z',
      lastRunReservedAt: T0 + 1000,
      dueAt: T0 + MIN + 2 * MIN,
    });
    expect(schedule.lastRunAfter).toBeUndefined();
  });

  it('skip: counts the skipped fire and when it was, creates no run', () => {
    const previous = everyMinute({ overlap: 'skip', lastRunId: 'tick.a', skipped: 4 });
    const { schedule, run } = applyFire(previous, { slot: T0, missed: 0 }, 'skip', T0);
    expect(run).toBeUndefined();
    expect(schedule).toMatchObject({ skipped: 5, lastSkippedAt: T0, lastRunId: 'tick.a', nextFireAt: T0 + MIN });
  });

  it('wait: creates the run behind the previous one', () => {
    const previous = everyMinute({ overlap: 'queue-one', lastRunId: 'tick.a' });
    const { schedule, run } = applyFire(previous, { slot: T0, missed: 0 }, 'wait', T0);
    expect(run).toEqual({ id: 'tick.20260301T120000Z', scheduledAt: T0, after: 'tick.a' });
    expect(schedule.lastRunAfter).toBe('tick.a');
  });

  it('adds missed slots to the counter', () => {
    expect(applyFire(everyMinute({ missed: 1 }), { slot: T0, missed: 2 }, 'run', T0).schedule.missed).toBe(3);
  });
});

describe('catchUpSlot (the supervisor)', () => {
  it('fires the next slot once it is past the grace, and nothing before', () => {
    const schedule = everyMinute();
    expect(catchUpSlot(schedule, T0 - 1, T0 + 2 * MIN, 24 * 3600_000)).toBeUndefined();
    expect(catchUpSlot(schedule, T0, T0 + 2 * MIN, 24 * 3600_000)).toBe(T0);
  });

  it('does not catch up further back than the maximum age', () => {
    const now = T0 + 48 * 3600_000;
    expect(catchUpSlot(everyMinute(), now, now, 24 * 3600_000)).toBe(now - 24 * 3600_000);
  });

  it('does nothing for a paused schedule', () => {
    expect(catchUpSlot(everyMinute({ state: 'paused' }), T0 + MIN, T0 + MIN, 3600_000)).toBeUndefined();
  });
});
