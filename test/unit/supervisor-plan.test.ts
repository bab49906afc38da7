import { describe, expect, it } from 'vitest';
import {
  bucketMinute,
  createDueAttributes,
  DUE_GRACE_MS,
  dueBucket,
  jobDueAt,
  jobDueAttributes,
  minuteStart,
  SWEEP_AGE_MS,
} from '../../shared/core/due';
import { retryScheduleName, wakeScheduleName } from '../../shared/core/ports';
import { SHARD_COUNT } from '../../shared/core/table';
import {
  bucketsToRead,
  DEFAULT_SUPERVISOR_OPTIONS,
  planInboxRepair,
  planJobRepair,
  resendBackoffMs,
  retryChange,
  SWEEP_LAG_MS,
  sweepMinutesToRead,
} from '../../shared/supervisor/plan';
import { leftScheduleOf } from '../../shared/supervisor/run';
import { newJob } from '../support/fakes';

const NOW = Date.parse('2026-03-01T12:34:56.789Z');
const MIN = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

describe('due index keys', () => {
  it('bucket by UTC minute and a shard of the item key', () => {
    expect(bucketMinute(NOW)).toBe('202603011234');
    expect(dueBucket(NOW, 'job-1')).toMatch(/^due#202603011234#[0-7]$/);
    expect(dueBucket(NOW, 'job-1')).toBe(dueBucket(NOW + 1000, 'job-1'));
  });

  it('spread the items due in one minute over every shard', () => {
    const shards = new Set(Array.from({ length: 200 }, (_, i) => dueBucket(NOW, `job-${i}`)));
    expect(shards.size).toBe(SHARD_COUNT);
  });

  it('are set only on unfinished jobs (a sparse index)', () => {
    const job = newJob({ id: 'j', type: 'echo', runAt: iso(NOW), updatedAt: iso(NOW) });
    expect(jobDueAt({ ...job, state: 'scheduled' })).toBe(NOW + DUE_GRACE_MS.scheduled);
    expect(jobDueAt({ ...job, state: 'queued' })).toBe(NOW + DUE_GRACE_MS.queued);
    expect(jobDueAt({ ...job, state: 'retrying' })).toBe(NOW + DUE_GRACE_MS.queued);
    expect(jobDueAt({ ...job, state: 'running', leaseExpiresAt: NOW + 30_000 })).toBe(
      NOW + 30_000 + DUE_GRACE_MS.running,
    );
    for (const state of ['succeeded', 'failed', 'cancelled', 'expired'] as const) {
      expect(jobDueAttributes({ ...job, state })).toEqual({});
    }
  });

  it('wait for the Lambda timeout of a running attempt, not only its lease', () => {
    const job = newJob({ id: 'j', type: 'echo', state: 'running', leaseExpiresAt: NOW + 30_000 });
    expect(jobDueAt(job, { claimedAt: NOW, attemptTimeoutMs: 600_000 })).toBe(NOW + 600_000 + 30_000 + 60_000);
  });

  it('date a queued job from when it was written if its runAt is long past (schedule catch-up)', () => {
    const job = newJob({ id: 'j', type: 'echo', runAt: iso(NOW - 3600_000), updatedAt: iso(NOW) });
    expect(jobDueAt(job)).toBe(NOW + DUE_GRACE_MS.queued);
  });
});

describe('createDueAttributes', () => {
  const at = (runIn: number, state: 'queued' | 'scheduled' = 'queued') =>
    newJob({ id: 'j', type: 'echo', state, runAt: iso(NOW + runIn), createdAt: iso(NOW), updatedAt: iso(NOW) });

  it('writes no due entry for a job the creation sweep looks at in time', () => {
    expect(createDueAttributes(at(0))).toEqual({});
    expect(createDueAttributes(at(SWEEP_AGE_MS))).toEqual({});
  });

  it('writes the due entry of a job due after the sweep looks at it (a long delay, a far-future job)', () => {
    expect(createDueAttributes(at(SWEEP_AGE_MS + 1))).toEqual(jobDueAttributes(at(SWEEP_AGE_MS + 1)));
    expect(createDueAttributes(at(3600_000, 'scheduled'))).toEqual({
      dueAt: NOW + 3600_000 + DUE_GRACE_MS.scheduled,
      dueBucket: dueBucket(NOW + 3600_000 + DUE_GRACE_MS.scheduled, 'j'),
    });
  });

  it('writes none for a finished job', () => {
    expect(createDueAttributes({ ...at(3600_000), state: 'succeeded' })).toEqual({});
  });
});

describe('sweepMinutesToRead', () => {
  const options = DEFAULT_SUPERVISOR_OPTIONS;
  const end = minuteStart(NOW - SWEEP_AGE_MS - SWEEP_LAG_MS);

  it('sweeps the last hour of ended creation minutes on the first run', () => {
    const first = sweepMinutesToRead(undefined, NOW, options);
    expect(first.minutes).toHaveLength(60);
    expect(first.minutes.at(-1)).toBe(end - MIN);
    expect(first.checkpoint).toBe(end);
  });

  it('sweeps each creation minute once: the next run starts where the last one stopped', () => {
    const first = sweepMinutesToRead(undefined, NOW, options);
    const next = sweepMinutesToRead(first.checkpoint, NOW + MIN, options);
    expect(next.minutes).toEqual([end]);
    expect(sweepMinutesToRead(next.checkpoint, NOW + MIN, options).minutes).toEqual([]);
  });

  it('reads a minute only once it ended the sweep age plus the lag ago', () => {
    const minute = minuteStart(NOW);
    expect(sweepMinutesToRead(minute, minute + MIN + SWEEP_AGE_MS + SWEEP_LAG_MS - 1, options).minutes).toEqual([]);
    expect(sweepMinutesToRead(minute, minute + MIN + SWEEP_AGE_MS + SWEEP_LAG_MS, options).minutes).toEqual([minute]);
  });

  it('catches a backlog up at most maxMinutesPerRun minutes per run', () => {
    const old = end - 1000 * MIN;
    const capped = sweepMinutesToRead(old, NOW, { ...options, maxMinutesPerRun: 10 });
    expect(capped.minutes).toHaveLength(10);
    expect(capped.minutes[0]).toBe(old);
    expect(capped.checkpoint).toBe(old + 10 * MIN);
  });
});

describe('bucketsToRead', () => {
  const options = DEFAULT_SUPERVISOR_OPTIONS;

  it('reads the last hour on the first run, then keeps a 5-minute safety window', () => {
    const first = bucketsToRead(undefined, NOW, options);
    expect(first.minutes).toHaveLength(61);
    expect(iso(first.minutes[0] ?? 0)).toBe('2026-03-01T11:34:00.000Z');
    expect(iso(first.minutes.at(-1) ?? 0)).toBe('2026-03-01T12:34:00.000Z');
    expect(iso(first.checkpoint)).toBe('2026-03-01T12:29:00.000Z');
  });

  it('reads from the checkpoint to now', () => {
    const next = bucketsToRead(Date.parse('2026-03-01T12:29:00Z'), NOW + MIN, options);
    expect(next.minutes.map((m) => iso(m).slice(11, 16))).toEqual([
      '12:29',
      '12:30',
      '12:31',
      '12:32',
      '12:33',
      '12:34',
      '12:35',
    ]);
    expect(iso(next.checkpoint)).toBe('2026-03-01T12:30:00.000Z');
  });

  it('reads at most maxMinutesPerRun buckets: the recent window, and the backlog from where it stopped', () => {
    const old = Date.parse('2026-02-28T00:00:00Z');
    const capped = bucketsToRead(old, NOW, { ...options, maxMinutesPerRun: 10 });
    expect(capped.minutes).toHaveLength(10);
    // 4 minutes of backlog, then the 6 minutes of the recent window (12:29 to 12:34)
    expect(capped.minutes.slice(0, 4)).toEqual([old, old + MIN, old + 2 * MIN, old + 3 * MIN]);
    expect(capped.minutes.slice(4).map((m) => iso(m).slice(11, 16))).toEqual([
      '12:29',
      '12:30',
      '12:31',
      '12:32',
      '12:33',
      '12:34',
    ]);
    expect(capped.checkpoint).toBe(old + 4 * MIN);
  });

  it('keeps reading what is due now while an old minute holds the checkpoint (a repair that keeps failing)', () => {
    const stuck = Date.parse('2026-02-20T00:00:00Z');
    for (const now of [NOW, NOW + 3600_000, NOW + 86_400_000]) {
      const run = bucketsToRead(stuck, now, options);
      expect(run.minutes).toContain(minuteStart(now));
      expect(run.minutes[0]).toBe(stuck);
    }
  });

  it('never moves the checkpoint past the safety window', () => {
    const ahead = bucketsToRead(NOW + 3600_000, NOW, options);
    expect(ahead.checkpoint).toBe(Date.parse('2026-03-01T12:29:00Z'));
  });
});

describe('retryChange', () => {
  const M = 60_000;
  it('drops the minutes read again without a failure, keeps the unread ones, adds the failed ones before the position', () => {
    const change = retryChange({
      saved: [1 * M, 2 * M, 50 * M],
      read: (m) => m !== 50 * M,
      failed: new Set([2 * M, 7 * M, 30 * M]),
      checkpoint: 20 * M,
    });
    // 1 done; 2 failed again (kept, not re-added); 50 not read (kept); 7 added; 30 is read anyway
    expect(change).toEqual({ checkpoint: 20 * M, done: [1 * M], failed: [7 * M] });
  });

  it('holds the position at the oldest failed minute that does not fit in the list', () => {
    const change = retryChange({
      saved: [1 * M],
      read: () => true,
      failed: new Set([1 * M, 4 * M, 3 * M, 5 * M]),
      checkpoint: 20 * M,
      max: 3,
    });
    expect(change).toEqual({ checkpoint: 5 * M, done: [], failed: [3 * M, 4 * M] });
  });
});

describe('planJobRepair', () => {
  it('clears finished jobs', () => {
    for (const state of ['succeeded', 'failed', 'cancelled', 'expired'] as const) {
      expect(planJobRepair(newJob({ id: 'j', type: 'echo', state }), 0, NOW)).toEqual({ kind: 'clear' });
    }
  });

  it('looks at a child waiting for its parents for a lost registration, whatever its times', () => {
    const child = newJob({
      id: 'j',
      type: 'echo',
      state: 'waiting',
      pendingParents: 2,
      runAt: new Date(NOW - 3600_000).toISOString(),
    });
    expect(planJobRepair(child, 0, NOW)).toEqual({ kind: 'reconcile' });
  });

  it('clears a job waiting for the jobs it invoked: it has no parents item, and each child’s end (its own repair) releases it', () => {
    const invoker = newJob({
      id: 'j',
      type: 'echo',
      state: 'waiting',
      pendingParents: 3,
      runAt: new Date(NOW - 3600_000).toISOString(),
      waitingFor: {
        kind: 'invoke',
        key: 'c0',
        until: new Date(NOW + 86_400_000).toISOString(),
        since: new Date(NOW - 3600_000).toISOString(),
        children: 3,
      },
    });
    expect(planJobRepair(invoker, 0, NOW)).toEqual({ kind: 'clear' });
  });

  it('re-sends a finished job whose children were never released, once its end is 10 minutes old', () => {
    const ended = (at: number, released?: number) =>
      newJob({
        id: 'j',
        type: 'echo',
        state: 'cancelled',
        finishedAt: iso(at),
        updatedAt: iso(at),
        childCount: 2,
        ...(released !== undefined ? { childrenReleased: released } : {}),
      });
    expect(planJobRepair(ended(NOW - 11 * MIN), 0, NOW)).toMatchObject({ kind: 'resend', dueAt: NOW + 5 * MIN });
    expect(planJobRepair(ended(NOW - 11 * MIN, 1), 0, NOW)).toMatchObject({ kind: 'resend' });
    expect(planJobRepair(ended(NOW - MIN), 0, NOW)).toEqual({ kind: 'reschedule', dueAt: NOW + 9 * MIN });
    expect(planJobRepair(ended(NOW - 11 * MIN, 2), 0, NOW)).toEqual({ kind: 'clear' });
  });

  it('re-sends a scheduled job whose time passed but that never started (a lost or unfired schedule)', () => {
    const job = newJob({ id: 'j', type: 'echo', state: 'scheduled', runAt: iso(NOW - 2 * MIN) });
    expect(planJobRepair(job, 0, NOW)).toMatchObject({ kind: 'resend', dueAt: NOW + 5 * MIN });
  });

  it('leaves a scheduled job alone until a minute after its runAt', () => {
    const job = newJob({ id: 'j', type: 'echo', state: 'scheduled', runAt: iso(NOW - 30_000) });
    expect(planJobRepair(job, 0, NOW)).toEqual({ kind: 'reschedule', dueAt: NOW + 30_000 });
  });

  it('re-sends a queued job not picked up 10 minutes after it was due', () => {
    const fresh = newJob({ id: 'j', type: 'echo', runAt: iso(NOW - 5 * MIN), updatedAt: iso(NOW - 5 * MIN) });
    expect(planJobRepair(fresh, 0, NOW).kind).toBe('reschedule');
    const lost = newJob({ id: 'j', type: 'echo', runAt: iso(NOW - 11 * MIN), updatedAt: iso(NOW - 11 * MIN) });
    expect(planJobRepair(lost, 2, NOW)).toMatchObject({ kind: 'resend', dueAt: NOW + 20 * MIN });
  });

  it('re-sends a running job a minute after its lease expired, and reschedules a live one', () => {
    const live = newJob({
      id: 'j',
      type: 'echo',
      state: 'running',
      attempts: 1,
      leaseExpiresAt: NOW + 10_000,
      startedAt: iso(NOW - 5_000),
    });
    expect(planJobRepair(live, 0, NOW)).toEqual({ kind: 'reschedule', dueAt: NOW + 10_000 + MIN });
    const dead = { ...live, leaseExpiresAt: NOW - MIN - 1 };
    expect(planJobRepair(dead, 0, NOW)).toMatchObject({ kind: 'resend', reason: 'running job whose lease expired' });
  });

  it('looks at a long-running live attempt again after as long as it has run, at most 15 minutes', () => {
    const live = (ranMs: number) =>
      newJob({
        id: 'j',
        type: 'echo',
        state: 'running',
        attempts: 1,
        leaseExpiresAt: NOW + 10_000,
        startedAt: iso(NOW - ranMs),
      });
    expect(planJobRepair(live(8 * MIN), 0, NOW)).toEqual({ kind: 'reschedule', dueAt: NOW + 8 * MIN });
    expect(planJobRepair(live(60 * MIN), 0, NOW)).toEqual({ kind: 'reschedule', dueAt: NOW + 15 * MIN });
  });

  it('backs off repeated re-sends: 5 min doubling, at most 6 h', () => {
    expect([0, 1, 2, 3].map(resendBackoffMs)).toEqual([5 * MIN, 10 * MIN, 20 * MIN, 40 * MIN]);
    expect(resendBackoffMs(50)).toBe(6 * 3600_000);
  });
});

describe('leftScheduleOf', () => {
  const base = { id: 'job-1', attempts: 0, updatedAt: '2026-01-01T00:00:00.000Z' };
  it('names the one-time schedule a re-sent job may have left behind', () => {
    expect(leftScheduleOf({ ...base, state: 'scheduled', runAt: '2026-01-02T00:00:00.000Z' })).toBe('job-1');
    // a retry longer than a message can be hidden (11 h 40 min) went through Scheduler, under the name of its attempt
    const longRetry = { ...base, state: 'retrying' as const, attempts: 2, runAt: '2026-01-01T11:40:00.001Z' };
    expect(leftScheduleOf(longRetry)).toBe(retryScheduleName('job-1', 2));
  });
  it('names the wake schedule of a long sleep or signal wait, under its wait number', () => {
    const longWait = { ...base, state: 'waiting' as const, resumes: 3, runAt: '2026-01-01T11:40:00.001Z' };
    expect(leftScheduleOf(longWait)).toBe(wakeScheduleName('job-1', 3));
    expect(leftScheduleOf({ ...longWait, runAt: '2026-01-01T11:40:00.000Z' })).toBeUndefined();
  });
  it('names none for a retry kept on its message, nor for queued or running jobs', () => {
    const shortRetry = { ...base, state: 'retrying' as const, attempts: 2, runAt: '2026-01-01T11:40:00.000Z' };
    expect(leftScheduleOf(shortRetry)).toBeUndefined();
    expect(leftScheduleOf({ ...base, state: 'queued', runAt: base.updatedAt })).toBeUndefined();
    expect(leftScheduleOf({ ...base, state: 'running', attempts: 1, runAt: base.updatedAt })).toBeUndefined();
  });
});

describe('planInboxRepair (a signal’s due entry came)', () => {
  const waiting = newJob({
    id: 'w',
    type: 'echo',
    state: 'waiting',
    runAt: iso(NOW + 366 * 86_400_000),
    updatedAt: iso(NOW - 20 * MIN),
    resumes: 1,
    waitingFor: { kind: 'signal', key: 'paid', until: iso(NOW + 366 * 86_400_000), since: iso(NOW - 20 * MIN) },
    waitSignal: 'paid',
  });
  const { waitSignal: _, ...wokenJob } = waiting;
  const woken = (at: number) => ({ ...wokenJob, runAt: iso(at) });

  it('wakes a job still waiting for the signal (its wake was lost), its own entry moved 10 minutes on', () => {
    expect(planInboxRepair({ job: waiting, repairs: 0 }, 'paid', NOW)).toEqual({
      kind: 'wake',
      dueAt: NOW + DUE_GRACE_MS.queued,
    });
    expect(planInboxRepair({ job: waiting, dueAt: NOW + 366 * 86_400_000, repairs: 3 }, 'paid', NOW)).toMatchObject({
      kind: 'wake',
    });
  });

  it('re-sends a job woken for it and not started 10 minutes on, unless its own entry comes by then', () => {
    const at = NOW - DUE_GRACE_MS.queued;
    expect(planInboxRepair({ job: woken(at), repairs: 2 }, 'paid', NOW)).toEqual({
      kind: 'resend',
      dueAt: NOW + resendBackoffMs(2),
    });
    expect(planInboxRepair({ job: woken(at), dueAt: NOW + 366 * 86_400_000, repairs: 0 }, 'paid', NOW)).toMatchObject({
      kind: 'resend',
    });
    // the supervisor's own wake (or an earlier look) put the job's entry there: nothing more to do
    expect(planInboxRepair({ job: woken(at), dueAt: NOW, repairs: 1 }, 'paid', NOW)).toEqual({ kind: 'clear' });
  });

  it('hands a job woken just now over to its own entry, at the time it would be overdue', () => {
    const at = NOW - MIN;
    expect(planInboxRepair({ job: woken(at), repairs: 0 }, 'paid', NOW)).toEqual({
      kind: 'hand-over',
      dueAt: at + DUE_GRACE_MS.queued,
    });
  });

  it('leaves alone a job that no longer waits for it, or waits for something else', () => {
    const clear = { kind: 'clear' };
    expect(planInboxRepair(undefined, 'paid', NOW)).toEqual(clear);
    expect(planInboxRepair({ job: waiting, repairs: 0 }, 'shipped', NOW)).toEqual(clear);
    for (const state of ['queued', 'running', 'retrying', 'scheduled', 'succeeded', 'failed', 'cancelled'] as const)
      expect(planInboxRepair({ job: { ...waiting, state }, repairs: 0 }, 'paid', NOW)).toEqual(clear);
    const sleeping = {
      ...wokenJob,
      waitingFor: { kind: 'sleep' as const, key: 'nap', until: iso(NOW + MIN), since: iso(NOW) },
    };
    expect(planInboxRepair({ job: sleeping, repairs: 0 }, 'paid', NOW)).toEqual(clear);
    expect(planInboxRepair({ job: { ...waiting, pendingParents: 1 }, repairs: 0 }, 'paid', NOW)).toEqual(clear);
  });
});
