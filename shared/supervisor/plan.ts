/**
 * The supervisor's decisions, as pure functions: which minute buckets of the due index to read,
 * and what to do with each overdue job. `run.ts` does the reading and writing.
 */
import { needsRelease } from '../core/dependencies';
import { DUE_GRACE_MS, minuteStart, SWEEP_AGE_MS } from '../core/due';
import type { Job } from '../core/job';
import { wokenFor } from '../core/lease';
import { isSettled } from '../core/states';
import { MAX_CATCH_UP_AGE_MS } from '../schedules/planner';

export interface SupervisorOptions {
  /** Every run re-reads this much of the recent past (clock skew, index lag). @default 5 minutes */
  safetyWindowMs: number;
  /** Without a checkpoint (the first run), start this far back. @default 1 hour */
  initialLookbackMs: number;
  /** Most minute buckets one run reads; the rest follow on the next run. @default 240 */
  maxMinutesPerRun: number;
  /** Catch-up fires per schedule per run. @default 60 */
  maxFiresPerSchedule: number;
  /** Fires older than this are not caught up (counted as missed), like Scheduler's event age. @default 24 hours */
  maxCatchUpAgeMs: number;
  /** Items repaired at once. @default 8 */
  concurrency: number;
  /** Creation minutes the sweep reads and repairs as one chunk. @default 10 */
  sweepChunkMinutes: number;
  /**
   * No sweep chunk starts this long after the pass started (the Lambda's timeout is 60 s): a
   * backlog goes on at the next pass, from the last chunk done. @default 30 seconds
   */
  sweepBudgetMs: number;
}

export const DEFAULT_SUPERVISOR_OPTIONS: SupervisorOptions = {
  safetyWindowMs: 5 * 60_000,
  initialLookbackMs: 60 * 60_000,
  maxMinutesPerRun: 240,
  maxFiresPerSchedule: 60,
  maxCatchUpAgeMs: MAX_CATCH_UP_AGE_MS,
  concurrency: 8,
  sweepChunkMinutes: 10,
  sweepBudgetMs: 30_000,
};

/**
 * The minute buckets one run reads (their start times), and the checkpoint if every one succeeds.
 * A run always reads the recent window (the last `safetyWindowMs` up to now); a backlog older
 * than that (the first run, a long outage, a bucket whose repair keeps failing and holds the
 * checkpoint) is read from the checkpoint on, `maxMinutesPerRun` minus the window at a time. So
 * a stuck old minute slows the backlog, never the repair of what is due now.
 */
export function bucketsToRead(
  checkpoint: number | undefined,
  now: number,
  options: Pick<SupervisorOptions, 'safetyWindowMs' | 'initialLookbackMs' | 'maxMinutesPerRun'>,
): { minutes: number[]; checkpoint: number } {
  const windowStart = minuteStart(now - options.safetyWindowMs);
  const from =
    checkpoint === undefined ? minuteStart(now - options.initialLookbackMs) : Math.min(checkpoint, windowStart);
  const last = minuteStart(now);
  const window: number[] = [];
  for (let minute = windowStart; minute <= last; minute += 60_000) window.push(minute);
  const backlog: number[] = [];
  const room = Math.max(1, options.maxMinutesPerRun - window.length);
  for (let minute = from; minute < windowStart && backlog.length < room; minute += 60_000) backlog.push(minute);
  const lastBacklog = backlog.at(-1);
  // All of the backlog read: keep the safety window. Capped: continue after the last minute read.
  const next = lastBacklog === undefined ? windowStart : Math.min(lastBacklog + 60_000, windowStart);
  return { minutes: [...backlog, ...window], checkpoint: next };
}

/**
 * Most minutes a read position keeps to read again (its retry list, on the checkpoint item):
 * past it, the position itself holds at the oldest failed minute left out, as it did before
 * there was a list.
 */
export const MAX_RETRY_MINUTES = 60;

/**
 * How a pass changes a read position's retry list: the saved minutes it read again without a
 * failure leave it (`done`); the minutes whose read or repair failed join it (`failed`), except
 * those at or after the new position, which the next pass reads anyway. Over
 * {@link MAX_RETRY_MINUTES}, the position holds at the oldest minute left out.
 */
export function retryChange(input: {
  saved: readonly number[];
  /** Whether the pass read `minute` (again, or in order). */
  read: (minute: number) => boolean;
  failed: ReadonlySet<number>;
  /** The position if nothing had failed. */
  checkpoint: number;
  max?: number;
}): { checkpoint: number; done: number[]; failed: number[] } {
  const max = input.max ?? MAX_RETRY_MINUTES;
  const done = input.saved.filter((m) => input.read(m) && !input.failed.has(m));
  const kept = input.saved.length - done.length;
  const added = [...input.failed].filter((m) => m < input.checkpoint && !input.saved.includes(m)).sort((a, b) => a - b);
  const room = Math.max(0, max - kept);
  const left = added.slice(room);
  return {
    checkpoint: left.length > 0 ? Math.min(input.checkpoint, left[0] as number) : input.checkpoint,
    done,
    failed: added.slice(0, room),
  };
}

/**
 * How long after a creation minute ends the sweep reads it, beyond {@link SWEEP_AGE_MS}: the
 * `byType` index lags the table by a fraction of a second, and API hosts' clocks may be a
 * little ahead.
 */
export const SWEEP_LAG_MS = 60_000;

/**
 * The creation minutes one run sweeps (their start times), and the checkpoint if every one
 * succeeds. A minute is swept once it ended {@link SWEEP_AGE_MS} + {@link SWEEP_LAG_MS} ago,
 * so each job is looked at once, about ten minutes after its creation. A backlog (the first
 * run, an outage, a minute whose sweep keeps failing) is read from the checkpoint on, at most
 * `maxMinutesPerRun` minutes per run.
 */
export function sweepMinutesToRead(
  checkpoint: number | undefined,
  now: number,
  options: Pick<SupervisorOptions, 'initialLookbackMs' | 'maxMinutesPerRun'>,
): { minutes: number[]; checkpoint: number } {
  // the first minute that has not ended long enough ago
  const end = minuteStart(now - SWEEP_AGE_MS - SWEEP_LAG_MS);
  const from = checkpoint ?? minuteStart(end - options.initialLookbackMs);
  const minutes: number[] = [];
  for (let minute = from; minute < end && minutes.length < options.maxMinutesPerRun; minute += 60_000)
    minutes.push(minute);
  const last = minutes.at(-1);
  return { minutes, checkpoint: last === undefined ? from : last + 60_000 };
}

/** The longest a live running attempt waits for the supervisor's next look (Lambda runs ≤ 15 min). */
export const MAX_RUNNING_LOOK_MS = 15 * 60_000;

/** Next check after a re-send: 5 minutes, doubling per repair, at most 6 hours. */
export function resendBackoffMs(repairs: number): number {
  return Math.min(6 * 3600_000, 5 * 60_000 * 2 ** Math.min(Math.max(repairs, 0), 10));
}

/** What to do with a job found in the due index or by the creation sweep. */
export type JobRepair =
  /** Finished: nothing to do (its due entry, if any, stays where it is: the index is never read there again). */
  | { kind: 'clear' }
  /** Not overdue after all (a live lease, a later runAt): look again at `dueAt`. */
  | { kind: 'reschedule'; dueAt: number }
  /** Lost: send its message again, look again at `dueAt`. */
  | { kind: 'resend'; dueAt: number; reason: string }
  /**
   * Waiting for its parents: check that each live parent has it registered and release the edges
   * of finished ones (a registration lost with the API call that wrote the child). No due entry:
   * from then on its parents' releases, repaired as any job's, bring it on.
   */
  | { kind: 'reconcile' };

/** A job that slept or waits for a signal is due at its runAt (its wake, or its wait's timeout), as a retry is. */
function planWaitRepair(job: Job, now: number, resend: (reason: string) => JobRepair): JobRepair {
  const due = Math.max(Date.parse(job.runAt), Date.parse(job.updatedAt)) + DUE_GRACE_MS.queued;
  return due > now ? { kind: 'reschedule', dueAt: due } : resend('waiting job not resumed after its wake time');
}

/**
 * Decides the repair of an overdue job from the job as stored now:
 * - `scheduled` past its runAt (+1 min): its schedule never fired or its message was lost;
 * - `queued` / `retrying` / `waiting` (a sleep or a signal's wait) 10 minutes after it was due and
 *   still not started: the send was lost (a job waiting for its parents is not due by time);
 * - `running` a minute after its lease (and its Lambda) ran out: the worker died and its
 *   message is not coming back (deleted, or in the DLQ);
 * - finished 10 minutes ago with children it never released (`needsRelease`);
 * - `waiting` for its parents: looked at once, by the creation sweep, for a lost registration.
 * A re-sent message is harmless if the original turns up: the claim lets one delivery run.
 */
export function planJobRepair(job: Job, repairs: number, now: number): JobRepair {
  const resend = (reason: string): JobRepair => ({ kind: 'resend', dueAt: now + resendBackoffMs(repairs), reason });
  // a held job too: nothing resends it (only an operator moves it), and it has nothing to release
  if (isSettled(job.state)) {
    if (!needsRelease(job)) return { kind: 'clear' };
    // Its release never completed (the call or worker that ended it died first, and no message
    // of it is left): its message brings it to a worker, which finds it finished and runs it.
    const due = Date.parse(job.finishedAt ?? job.updatedAt) + DUE_GRACE_MS.queued;
    return due > now ? { kind: 'reschedule', dueAt: due } : resend('finished job whose children were never released');
  }
  switch (job.state) {
    case 'scheduled': {
      const due = Date.parse(job.runAt) + DUE_GRACE_MS.scheduled;
      return due > now ? { kind: 'reschedule', dueAt: due } : resend('scheduled job past its runAt never started');
    }
    case 'waiting':
      // waiting for its parents: their release makes it due (nothing to look at by time), once
      // it is registered with each of them
      // waiting for the jobs it invoked: each child's end (its own repair) releases it; it has
      // no parents item to look at
      if (job.pendingParents !== undefined && job.waitingFor?.kind === 'invoke') return { kind: 'clear' };
      if (job.pendingParents !== undefined) return { kind: 'reconcile' };
      return planWaitRepair(job, now, resend);
    case 'queued':
    case 'retrying': {
      const due = Math.max(Date.parse(job.runAt), Date.parse(job.updatedAt)) + DUE_GRACE_MS.queued;
      return due > now ? { kind: 'reschedule', dueAt: due } : resend(`${job.state} job not picked up`);
    }
    case 'running': {
      const due = (job.leaseExpiresAt ?? 0) + DUE_GRACE_MS.running;
      if (due <= now) return resend('running job whose lease expired');
      // A live lease is renewed every few seconds: rather than look again a minute after it (a
      // due move, three write units, every minute of a long run), look again after as long as
      // the attempt has run so far (at most 15 minutes, Lambda's longest run): a few looks per
      // attempt, and a dead worker is found within about the time the attempt had run.
      const runningFor = now - Date.parse(job.startedAt ?? job.updatedAt);
      return { kind: 'reschedule', dueAt: Math.max(due, now + Math.min(MAX_RUNNING_LOOK_MS, Math.max(0, runningFor))) };
    }
    default:
      return { kind: 'clear' };
  }
}

/** What to do with a signal whose inbox item's due entry came (`SIGNAL_LOOK_MS` after it was stored). */
export type InboxRepair =
  /**
   * Nothing waits for it now: the job resumed (running, finished), or will find it in its inbox
   * when its wait begins (queued, sleeping, waiting for something else); a job suspending right
   * now looks at its inbox after its suspend write.
   */
  | { kind: 'clear' }
  /**
   * The job waits for it and was never woken (the sender died after the inbox write, or its wake
   * write failed): claim the job's due entry (moved to `dueAt`), wake it, send its message.
   */
  | { kind: 'wake'; dueAt: number }
  /**
   * Woken for it, but its message never brought it to a worker (the send failed, and the sender
   * was not retried): claim the job's due entry (moved to `dueAt`, one more repair), send again.
   */
  | { kind: 'resend'; dueAt: number }
  /**
   * Woken for it a short while ago (a late replay of the signal, a worker's look): its own due
   * entry is moved to when it will be overdue, where the job's repair (`planJobRepair`) takes over.
   */
  | { kind: 'hand-over'; dueAt: number };

/**
 * Decides the look at a signal's due entry from its job as stored now (`jobDueAt`: the job's own
 * due entry, `repairs` its re-sends). After a wake or a re-send the job's own due entry owns the
 * next look, so a pass that reads the signal's entry again (the safety window) finds it covered
 * and does nothing more.
 */
export function planInboxRepair(
  loaded: { job: Job; dueAt?: number; repairs: number } | undefined,
  signal: string,
  now: number,
): InboxRepair {
  if (!loaded) return { kind: 'clear' };
  const { job } = loaded;
  if (job.state !== 'waiting' || job.pendingParents !== undefined) return { kind: 'clear' };
  // a woken job is lost if it is still waiting this long after its wake (its runAt), as a queued job is
  if (job.waitSignal === signal) return { kind: 'wake', dueAt: now + DUE_GRACE_MS.queued };
  if (!wokenFor(job, signal, now)) return { kind: 'clear' };
  const overdue = Date.parse(job.runAt) + DUE_GRACE_MS.queued;
  if (loaded.dueAt !== undefined && loaded.dueAt <= overdue) return { kind: 'clear' }; // its own entry covers it
  if (overdue <= now) return { kind: 'resend', dueAt: now + resendBackoffMs(loaded.repairs) };
  return { kind: 'hand-over', dueAt: overdue };
}
