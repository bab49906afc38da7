/**
 * One pass of the supervisor: reads the due index from its checkpoint to now, sweeps the jobs
 * created about ten minutes ago (`byType`, by creation minute), reads the recurring schedules,
 * and repairs what it finds, without scanning the table.
 *
 * - A job that should have started (a far-future job whose schedule never fired, a queued job
 *   whose message was lost, a running job whose worker died and whose message is not coming
 *   back) gets its message sent again.
 * - A recurring schedule whose fire is overdue (its EventBridge Scheduler schedule was deleted,
 *   disabled behind Orrery's back, or never fires, as on LocalStack) is fired here, slot by slot,
 *   with the same run ids Scheduler's fires would create.
 * - A finished job in the due index is left as it is: its entry is in a minute the index is not
 *   read at again.
 * - A signal's inbox item has a due entry too, `SIGNAL_LOOK_MS` after it was stored: a job still
 *   waiting for it then lost its wake (the sender died after the inbox write, or its wake write
 *   failed), and is woken and sent here; one woken but never started has its message sent again.
 *
 * Every repair first moves the item's `dueAt` with a write conditioned on the value it read (or
 * on there being none, for a job the sweep found), so
 * two supervisors (or a supervisor and a worker) never both act on one item, and a repair that
 * fails half-way is retried when the new `dueAt` comes. Sending a job message twice is harmless:
 * the claim lets only one delivery run.
 */
import type { PlatformConfig } from '../config';
import { MAX_VISIBILITY_DELAY_MS } from '../core/backoff';
import type { JobGraph } from '../core/dependencies';
import { bucketMinute, DUE_GRACE_MS, dueBucketOf, minuteStart, SWEEP_AGE_MS } from '../core/due';
import type { DueEntry, DueIndex, DueKey } from '../core/due-index';
import { fireMessage } from '../core/fire-message';
import type { Job, JobMessage } from '../core/job';
import { inboxOf, type JournalScope } from '../core/journal';
import { type JobQueue, type JobScheduler, type JobStore, retryScheduleName, wakeScheduleName } from '../core/ports';
import { incarnationOf, keys, SHARD_COUNT } from '../core/table';
import { type DispatchDeps, dispatchNow, handOffOf } from '../dispatch/dispatch';
import { reconcileChild, releaseDepsOf } from '../dispatch/release';
import { errorFields, type Logger } from '../logger';
import { confirmReservedRun, processFire } from '../schedules/fire-processor';
import { type Schedule, scheduleDueAt, withDue } from '../schedules/model';
import { catchUpSlot } from '../schedules/planner';
import type { ScheduleStore } from '../schedules/ports';
import {
  bucketsToRead,
  DEFAULT_SUPERVISOR_OPTIONS,
  planInboxRepair,
  planJobRepair,
  resendBackoffMs,
  retryChange,
  type SupervisorOptions,
  sweepMinutesToRead,
} from './plan';

export interface SupervisorDeps {
  /** Routes of every job type (queue URLs to send to). */
  config: PlatformConfig;
  index: DueIndex;
  jobs: JobStore;
  schedules: ScheduleStore;
  queue: JobQueue;
  /** Deletes the one-time schedule of a job the supervisor re-sends (it never fired). */
  scheduler: JobScheduler;
  log: Logger;
  options?: Partial<SupervisorOptions>;
  /**
   * Job dependencies: with it, a child the creation sweep finds still waiting for its parents is
   * checked for a lost registration (`reconcileChild`). @default such a child is left to its parents' releases
   */
  graph?: JobGraph;
}

/** What one pass did. */
export interface SupervisorReport {
  /** Minute buckets read (each in every shard). */
  minutes: number;
  /** Overdue entries found. */
  found: number;
  /** Creation minutes swept in full (each in every shard of every type). */
  swept: number;
  /** Jobs the sweep found unfinished without a due entry (each then repaired or given one). */
  sweptUnfinished: number;
  /** Jobs whose message was sent again, by id. */
  resent: string[];
  /** Of those, jobs woken for a signal in their inbox whose wake was lost, by id. */
  woken: string[];
  /** Runs created for schedule fires that Scheduler missed, by id. */
  fired: string[];
  /** Schedule fires skipped by their overlap policy while catching up. */
  skipped: number;
  /** One-time schedules of re-sent jobs that were deleted (they had not fired, and never will where Scheduler does not fire). */
  schedulesDeleted: number;
  /** Finished jobs found in the due index (nothing to do). */
  cleared: number;
  /** Items that were not overdue after all (moved to their real due time). */
  rescheduled: number;
  /** Children waiting for their parents that were checked for a lost registration. */
  reconciled: number;
  /** Items another writer changed first (nothing to do). */
  raced: number;
  /** Items whose repair failed (left for the next pass). */
  failed: number;
  /** Where the next pass starts (epoch ms of a minute). */
  checkpoint: number;
  /** Where the next pass's creation sweep starts (epoch ms of a minute). */
  sweepCheckpoint: number;
  /** Minutes the next pass reads again (a read or a repair there failed), in the due index and in the sweep. */
  retryMinutes: { due: number; sweep: number };
  /** Wall-clock milliseconds of each phase of the pass (reading the due index, the sweep, the schedules, the repairs). */
  phaseMs: { due: number; sweep: number; schedules: number; repairs: number };
}

const JOB_PREFIX = 'job#';
const SCHEDULE_PREFIX = 'schedule#';

/**
 * Runs one supervisor pass at `now` (epoch ms; tests pass their clock's time).
 *
 * @example
 * const report = await runSupervisorOnce(deps, clock.now());
 * log.info('supervisor pass', { resent: report.resent.length, fired: report.fired.length });
 */
export async function runSupervisorOnce(deps: SupervisorDeps, now: number): Promise<SupervisorReport> {
  const started = Date.now();
  const options: SupervisorOptions = { ...DEFAULT_SUPERVISOR_OPTIONS, ...deps.options };
  const [saved, savedSweep] = await Promise.all([deps.index.getCheckpoint('due'), deps.index.getCheckpoint('sweep')]);
  const plan = bucketsToRead(saved?.minute, now, options);
  const sweep = sweepMinutesToRead(savedSweep?.minute, now, options);
  // Minutes whose read or repair failed at an earlier pass, read again in this one.
  const dueAgain = (saved?.retry ?? []).filter((m) => !plan.minutes.includes(m));
  const sweepAgain = (savedSweep?.retry ?? []).filter((m) => !sweep.minutes.includes(m));
  const report: SupervisorReport = {
    minutes: plan.minutes.length + dueAgain.length,
    found: 0,
    swept: 0,
    sweptUnfinished: 0,
    resent: [],
    woken: [],
    fired: [],
    skipped: 0,
    schedulesDeleted: 0,
    cleared: 0,
    rescheduled: 0,
    raced: 0,
    reconciled: 0,
    failed: 0,
    checkpoint: plan.checkpoint,
    sweepCheckpoint: sweep.checkpoint,
    retryMinutes: { due: 0, sweep: 0 },
    phaseMs: { due: 0, sweep: 0, schedules: 0, repairs: 0 },
  };
  let phaseStart = Date.now();
  const lap = (phase: keyof SupervisorReport['phaseMs']) => {
    const t = Date.now();
    report.phaseMs[phase] += t - phaseStart;
    phaseStart = t;
  };
  /** Minutes (of the due index, of the sweep) whose read or repair failed in this pass. */
  const dueFailed = new Set<number>();
  const sweepFailed = new Set<number>();

  const entries: { entry: DueEntry; minute: number }[] = [];
  // Every (minute, shard) bucket of the plan, several at once: a backlog of hours is thousands
  // of small queries.
  const buckets = [...dueAgain, ...plan.minutes].flatMap((minute) =>
    Array.from({ length: SHARD_COUNT }, (_, shard) => ({ minute, shard })),
  );
  const read = await mapLimit(buckets, options.concurrency * 4, ({ minute, shard }) =>
    deps.index.query(dueBucketOf(bucketMinute(minute), shard), now).catch((error: unknown) => {
      deps.log.error('could not read a due bucket; the next pass reads it again', {
        minute: new Date(minute).toISOString(),
        shard,
        ...errorFields(error),
      });
      dueFailed.add(minute);
      return [] as DueEntry[];
    }),
  );
  read.forEach((found, i) => {
    const minute = buckets[i]?.minute ?? 0;
    for (const entry of found) entries.push({ entry, minute });
  });
  report.found = entries.length;
  lap('due');

  // Recurring schedules: few, read in full every pass (their dueAt is in no index, so a fire
  // costs no index write).
  const scheduleEntries: { entry: DueEntry; minute: number }[] = [];
  try {
    let cursor: string | undefined;
    do {
      const page = await deps.schedules.list({ limit: 100, ...(cursor !== undefined ? { cursor } : {}) });
      for (const schedule of page.schedules) {
        const dueAt = scheduleDueAt(schedule);
        if (dueAt !== undefined && dueAt <= now)
          scheduleEntries.push({
            entry: { pk: `${SCHEDULE_PREFIX}${schedule.name}`, dueAt },
            minute: minuteStart(dueAt),
          });
      }
      cursor = page.cursor;
    } while (cursor !== undefined);
  } catch (error) {
    report.failed += 1;
    deps.log.error('could not read the schedules; the next pass reads them again', errorFields(error));
  }

  lap('schedules');

  // Schedules first (a missed fire is the most time-bound repair), then jobs, concurrently;
  // fires of one schedule in order (it appears once per pass).
  const all = [...scheduleEntries, ...entries];
  let next = 0;
  const worker = async () => {
    while (next < all.length) {
      const item = all[next++];
      if (!item) break;
      try {
        const signal = inboxOf(item.entry);
        if (signal) await repairSignal(deps, signal, now, report);
        else if (item.entry.pk.startsWith(JOB_PREFIX)) await repairJob(deps, item.entry, now, report, false);
        else if (item.entry.pk.startsWith(SCHEDULE_PREFIX))
          await catchUpSchedule(deps, options, item.entry, now, report);
      } catch (error) {
        report.failed += 1;
        if (item.entry.pk.startsWith(JOB_PREFIX) && !(await deferRepair(deps, item.entry, item.entry.dueAt, now)))
          dueFailed.add(item.minute);
        deps.log.error('supervisor repair failed; the next pass tries again', {
          pk: item.entry.pk,
          ...errorFields(error),
        });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, worker));
  lap('repairs');

  // The creation sweep, last and within a time budget: each job once, SWEEP_AGE_MS after its
  // creation minute: a chunk of minutes at a time, in one range query per partition (a backlog
  // of hours is a few pages, not a query per minute), then the minutes an earlier pass failed
  // at, one by one. A job whose repair fails gets a due entry (or, when that fails too, its
  // creation minute goes on the retry list); a chunk that cannot be read holds the checkpoint.
  const types = Object.keys(deps.config.routes).sort();
  const partitions = types.flatMap((type) =>
    Array.from({ length: SHARD_COUNT }, (_, shard) => keys.byTypeShard(type, shard)),
  );
  const sweepRead = new Set<number>();
  /** Sweeps the jobs created in [from, to); false when they could not be read. */
  const sweepWindow = async (from: number, to: number): Promise<boolean> => {
    try {
      const found = (
        await mapLimit(partitions, options.concurrency * 2, (partition) => deps.index.created(partition, from, to))
      ).flat();
      const createdAt = new Map(found.map((job) => [job.id, job.createdAt]));
      const unfinished = found.length > 0 ? await deps.index.unfinished(found.map((job) => job.id)) : [];
      report.sweptUnfinished += unfinished.length;
      await mapLimit(unfinished, options.concurrency, async (id) => {
        const minute = minuteStart(createdAt.get(id) ?? from);
        // Late in the pass, a job not yet looked at gets a due entry (5 minutes on) instead, so
        // a window of many slow repairs cannot run the pass into its Lambda's timeout.
        if (Date.now() - started > options.sweepBudgetMs * 1.5) {
          if (!(await deferRepair(deps, keys.job(id), undefined, now))) sweepFailed.add(minute);
          return;
        }
        try {
          await repairJob(deps, { pk: keys.job(id), dueAt: minute + SWEEP_AGE_MS }, now, report, true);
        } catch (error) {
          report.failed += 1;
          if (!(await deferRepair(deps, keys.job(id), undefined, now))) sweepFailed.add(minute);
          deps.log.error('supervisor repair failed; the next pass tries again', {
            pk: keys.job(id),
            ...errorFields(error),
          });
        }
      });
      for (let minute = from; minute < to; minute += 60_000) sweepRead.add(minute);
      return true;
    } catch (error) {
      deps.log.error('could not sweep the jobs created in a window; the next pass reads it again', {
        from: new Date(from).toISOString(),
        to: new Date(to).toISOString(),
        ...errorFields(error),
      });
      return false;
    }
  };
  let sweepTo = savedSweep?.minute ?? sweep.minutes[0] ?? sweep.checkpoint;
  for (let i = 0; i < sweep.minutes.length; i += options.sweepChunkMinutes) {
    if (Date.now() - started > options.sweepBudgetMs) break; // the next pass goes on from here
    const from = sweep.minutes[i] as number;
    const chunkEnd =
      (sweep.minutes[Math.min(i + options.sweepChunkMinutes, sweep.minutes.length) - 1] as number) + 60_000;
    if (!(await sweepWindow(from, chunkEnd))) break;
    sweepTo = chunkEnd;
    report.swept += (chunkEnd - from) / 60_000;
  }
  // then the minutes an earlier pass failed at, with what is left of the budget
  for (const minute of sweepAgain) {
    if (Date.now() - started > options.sweepBudgetMs) break;
    if (!(await sweepWindow(minute, minute + 60_000))) sweepFailed.add(minute);
  }
  lap('sweep');

  const dueRead = new Set([...dueAgain, ...plan.minutes]);
  const dueChange = retryChange({
    saved: saved?.retry ?? [],
    read: (m) => dueRead.has(m),
    failed: dueFailed,
    checkpoint: plan.checkpoint,
  });
  const sweepChange = retryChange({
    saved: savedSweep?.retry ?? [],
    read: (m) => sweepRead.has(m),
    failed: sweepFailed,
    checkpoint: sweepTo,
  });
  report.checkpoint = dueChange.checkpoint;
  report.sweepCheckpoint = sweepChange.checkpoint;
  const listed = (saved: number[] | undefined, change: { done: number[]; failed: number[] }) =>
    (saved?.length ?? 0) - change.done.length + change.failed.length;
  report.retryMinutes = { due: listed(saved?.retry, dueChange), sweep: listed(savedSweep?.retry, sweepChange) };
  // both saves run to their end before a failure of either is thrown
  const saves = await Promise.allSettled([
    deps.index.setCheckpoint({ minute: dueChange.checkpoint, done: dueChange.done, failed: dueChange.failed }, 'due'),
    deps.index.setCheckpoint(
      { minute: sweepChange.checkpoint, done: sweepChange.done, failed: sweepChange.failed },
      'sweep',
    ),
  ]);
  for (const save of saves) if (save.status === 'rejected') throw save.reason;
  if (report.resent.length + report.fired.length + report.failed > 0) {
    deps.log.info('supervisor pass repaired items', {
      resent: report.resent.length,
      fired: report.fired.length,
      failed: report.failed,
    });
  }
  return report;
}

/** How long after a failed repair the job's due entry brings it back. */
export const FAILED_REPAIR_RETRY_MS = 5 * 60_000;

/**
 * After a job's repair failed: moves its due entry (from `seen`, what the pass read; undefined
 * for a job the sweep found) to {@link FAILED_REPAIR_RETRY_MS} from now, so the entry owns the
 * next try and the pass need not read its minute again. True when the entry moved, or changed
 * first (then whoever changed it owns it); false when the move failed too (the caller lists the
 * minute).
 */
async function deferRepair(deps: SupervisorDeps, key: DueKey, seen: number | undefined, now: number): Promise<boolean> {
  try {
    await deps.index.moveDue(key, seen, now + FAILED_REPAIR_RETRY_MS);
    return true;
  } catch (error) {
    deps.log.warn('could not move the due entry of a job whose repair failed; its minute is read again', {
      ...(typeof key === 'string' ? { pk: key } : key),
      ...errorFields(error),
    });
    return false;
  }
}

/** `fn` over `items`, at most `limit` at once, results in order. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const run = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), items.length) }, run));
  return results;
}

/**
 * The hand-off of a job the supervisor re-sends: at once, and never through a schedule (the
 * supervisor may only delete schedules).
 */
const handOffDeps = (deps: SupervisorDeps): DispatchDeps => handOffOf(deps.config, deps.queue);

/** Sends a schedule fire's run, at once, through the one hand-off. */
async function send(deps: SupervisorDeps, message: JobMessage, now: number): Promise<void> {
  await dispatchNow(handOffDeps(deps), message, now);
}

/**
 * Repairs a job the due index (at `entry.dueAt`) or the creation sweep (`swept`: the job has no
 * due entry) led to. Every write is conditioned on the due attribute as it was read.
 */
async function repairJob(
  deps: SupervisorDeps,
  entry: DueEntry,
  now: number,
  report: SupervisorReport,
  swept: boolean,
): Promise<void> {
  const loaded = await deps.index.loadJob(entry.pk.slice(JOB_PREFIX.length));
  const seen = swept ? undefined : entry.dueAt;
  if (!loaded || loaded.dueAt !== seen) {
    report.raced += 1; // gone, or given a due entry / moved since it was read
    return;
  }
  const { job } = loaded;
  const repair = planJobRepair(job, loaded.repairs, now);
  switch (repair.kind) {
    case 'clear':
      report.cleared += 1;
      return;
    case 'reconcile':
      if (!deps.graph) {
        report.cleared += 1;
        return;
      }
      // Found through a due entry (a look that failed before): claim it first, as every repair
      // does, so that passes reading its minute again do not look too.
      if (
        seen !== undefined &&
        !(await deps.index.moveDue(entry.pk, seen, now + resendBackoffMs(loaded.repairs), { repair: true }))
      ) {
        report.raced += 1;
        return;
      }
      await reconcileChild(
        // no Scheduler: the supervisor may only delete schedules; a child due later is sent with
        // SQS's longest delay and hidden again until its runAt
        releaseDepsOf({ config: deps.config, graph: deps.graph, queue: deps.queue }),
        job,
        now,
        deps.log.child({ jobId: job.id }),
      );
      report.reconciled += 1;
      return;
    case 'reschedule':
      if (await deps.index.moveDue(entry.pk, seen, repair.dueAt)) report.rescheduled += 1;
      else report.raced += 1;
      return;
    case 'resend': {
      // Claim the repair first: of several supervisors, only the one that moves dueAt sends.
      if (!(await deps.index.moveDue(entry.pk, seen, repair.dueAt, { repair: true }))) {
        report.raced += 1;
        return;
      }
      try {
        await dispatchNow(handOffDeps(deps), job, now);
      } catch (error) {
        // The moved due entry owns the next try: nothing for the checkpoint to hold.
        report.failed += 1;
        deps.log.error('could not re-send a lost job; the supervisor tries again at its next due time', {
          jobId: job.id,
          ...errorFields(error),
        });
        return;
      }
      report.resent.push(job.id);
      deps.log.warn('re-sent the message of a lost job', { jobId: job.id, state: job.state, reason: repair.reason });
      await deleteLeftSchedule(deps, job, report);
      return;
    }
  }
}

/**
 * Looks at a signal whose inbox item's due entry came: wakes the job that still waits for it and
 * sends its message, or sends again the message of one woken but never started. Every act is
 * claimed first by moving the job's own due entry (conditioned on the value read), which then
 * owns the next look: of passes that read the signal's entry again (the safety window) and of
 * concurrent supervisors, one acts. A wake that fails throws (the caller moves the signal's
 * entry 5 minutes on); a send that fails is left to the job's due entry, as a re-send's is.
 */
async function repairSignal(
  deps: SupervisorDeps,
  signal: JournalScope & { name: string },
  now: number,
  report: SupervisorReport,
): Promise<void> {
  const found = await deps.index.loadJob(signal.jobId);
  // the signal of an earlier job of the same id (past its retention) wakes no later one
  const loaded = found && incarnationOf(found.job.createdAt) === signal.incarnation ? found : undefined;
  const repair = planInboxRepair(loaded, signal.name, now);
  if (repair.kind === 'clear' || !loaded) {
    report.cleared += 1;
    return;
  }
  const { job } = loaded;
  const claimed = await deps.index.moveDue(keys.job(job.id), loaded.dueAt, repair.dueAt, {
    repair: repair.kind !== 'hand-over',
  });
  if (!claimed) {
    report.raced += 1;
    return;
  }
  if (repair.kind === 'hand-over') {
    report.rescheduled += 1;
    return;
  }
  // Refused only when the job changed first (a worker's look or the sender's replay woke it, a
  // cancel): a job woken for the signal counts as woken, and a spare message is harmless.
  if (repair.kind === 'wake' && !(await deps.jobs.wake({ id: job.id, signal: signal.name, now }))) {
    report.raced += 1;
    return;
  }
  try {
    await dispatchNow(handOffDeps(deps), job, now);
  } catch (error) {
    report.failed += 1;
    deps.log.error('could not send the message of a job woken for its signal; its due entry brings it back', {
      jobId: job.id,
      ...errorFields(error),
    });
    return;
  }
  report.resent.push(job.id);
  if (repair.kind === 'wake') report.woken.push(job.id);
  deps.log.warn(
    repair.kind === 'wake'
      ? 'woke a job whose signal was stored but whose wake was lost'
      : 're-sent the message of a job woken for its signal but never started',
    { jobId: job.id, signal: signal.name },
  );
  await deleteLeftSchedule(deps, job, report);
}

/**
 * The one-time schedule that should have brought a re-sent job (a far-future job's, or a retry's
 * longer than 12 h) did not fire: delete it, so it neither fires late (harmless: the claim drops
 * the duplicate) nor stays behind where Scheduler never fires (LocalStack, moto). Best effort:
 * a failure is logged, and the repair stands.
 */
async function deleteLeftSchedule(deps: SupervisorDeps, job: Job, report: SupervisorReport): Promise<void> {
  const name = leftScheduleOf(job);
  if (name === undefined) return;
  try {
    if (await deps.scheduler.deleteJobSchedule(name)) report.schedulesDeleted += 1;
  } catch (error) {
    deps.log.warn('could not delete the schedule of a re-sent job', {
      jobId: job.id,
      schedule: name,
      ...errorFields(error),
    });
  }
}

/** The name of the one-time schedule a job in its state may have left behind, if any. */
export function leftScheduleOf(
  job: Pick<Job, 'id' | 'state' | 'attempts' | 'runAt' | 'updatedAt' | 'resumes'>,
): string | undefined {
  if (job.state === 'scheduled') return job.id;
  const viaScheduler = Date.parse(job.runAt) - Date.parse(job.updatedAt) > MAX_VISIBILITY_DELAY_MS;
  if (job.state === 'retrying' && job.attempts > 0 && viaScheduler) return retryScheduleName(job.id, job.attempts);
  if (job.state === 'waiting' && (job.resumes ?? 0) > 0 && viaScheduler)
    return wakeScheduleName(job.id, job.resumes ?? 0);
  return undefined;
}

async function catchUpSchedule(
  deps: SupervisorDeps,
  options: SupervisorOptions,
  entry: DueEntry,
  now: number,
  report: SupervisorReport,
): Promise<void> {
  const name = entry.pk.slice(SCHEDULE_PREFIX.length);
  const upTo = now - DUE_GRACE_MS.fire; // later fires are still Scheduler's to deliver
  const fireDeps = {
    schedules: deps.schedules,
    jobs: deps.jobs,
    log: deps.log.child({ schedule: name }),
    retentionMs: deps.config.retentionDays * 86_400_000,
  };
  for (let i = 0; i < options.maxFiresPerSchedule; i++) {
    const schedule = await deps.schedules.get(name);
    if (!schedule) return;
    if (i === 0 && schedule.dueAt !== entry.dueAt) {
      report.raced += 1; // fired, changed or paused since the index was read
      return;
    }
    const slot = catchUpSlot(schedule, upTo, now, options.maxCatchUpAgeMs);
    if (slot === undefined) {
      if (i === 0) {
        // A fire whose run could not be written may have left it reserved only: write it now.
        for (const message of await confirmReservedRun(fireDeps, name, now)) {
          await send(deps, message, now);
          report.fired.push(message.id);
        }
        await settleScheduleDue(deps, schedule, entry, now, report);
      }
      return;
    }
    const result = await processFire(fireDeps, { name, type: schedule.type, fireTime: slot }, now);
    for (const message of result.also) {
      await send(deps, message, now);
      report.fired.push(message.id);
    }
    if (result.kind === 'skipped') report.skipped += 1;
    if (result.kind === 'ignored') return;
    if (result.kind === 'run') {
      await send(deps, result.message, now);
      report.fired.push(result.message.id);
      deps.log.warn('fired a schedule fire that Scheduler missed', {
        fire: fireMessage(name, schedule.type, slot).scheduledTime,
        jobId: result.message.id,
      });
    }
  }
}

/**
 * Nothing of the schedule is overdue after all (its next fire is still within Scheduler's
 * grace): move its index entry to when it will be, so it stays in the supervisor's window.
 */
async function settleScheduleDue(
  deps: SupervisorDeps,
  schedule: Schedule,
  entry: DueEntry,
  now: number,
  report: SupervisorReport,
): Promise<void> {
  const target = withDue(schedule, now).dueAt;
  if (target === undefined || target === entry.dueAt) return;
  if (!(await deps.index.moveDue(entry.pk, entry.dueAt, target))) report.raced += 1;
  else report.rescheduled += 1;
}
