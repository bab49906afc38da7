/**
 * The firing engine of the EventBridge Scheduler stand-in: turns schedules into deliveries on an
 * injectable clock. See `scheduler-standin.ts` for the public API and semantics.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../shared/core/clock';
import { nextFireTime, type ParsedExpression } from '../../shared/core/schedule-expression';
import type { SchedulerTarget, StoredSchedule } from './scheduler-standin-model';

/** One invocation handed to the `deliver` callback. `target.Input` has its placeholders filled in. */
export interface ScheduledFire {
  scheduleArn: string;
  name: string;
  group: string;
  target: SchedulerTarget;
  /** The scheduled time (epoch ms), the same on every attempt of this fire. */
  scheduledTime: number;
  /** 1 for the first attempt, 2 for the first retry, … */
  attempt: number;
  /** A new id per attempt, as `<aws.scheduler.execution-id>`. */
  executionId: string;
}

/** Invokes a schedule's target; throwing makes the stand-in retry on a later `fireDue()`. */
export type Deliver = (fire: ScheduledFire) => Promise<void>;

/** A schedule and its parsed expression, as the stand-in keeps them. */
export interface ScheduleRecord {
  /** Stable for the schedule's lifetime (survives updates, not re-creation). */
  readonly id: string;
  schedule: StoredSchedule;
  parsed: ParsedExpression;
  /** ClientToken of the CreateSchedule call, for idempotent retries of that call. */
  createToken?: string;
  /** The schedule has fired its last fire (one-time, or recurring past its EndDate). */
  completed: boolean;
}

interface PendingFire {
  recordId: string;
  scheduleArn: string;
  name: string;
  group: string;
  target: SchedulerTarget;
  scheduledTime: number;
  attempt: number;
  /** Collection order, to break ties between fires due at the same time. */
  seq: number;
  /** This is the schedule's last fire. */
  final: boolean;
}

/** Upper bound of fires collected per schedule per round; the rest follow on the next round. */
const MAX_FIRES_PER_ROUND = 10_000;

/** `2026-01-01T10:00:00Z`: ISO 8601 UTC to the second, as AWS fills `<aws.scheduler.scheduled-time>`. */
export function scheduledTimeText(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Replaces the EventBridge Scheduler context attributes in a target Input. */
export function fillPlaceholders(
  input: string,
  values: { scheduleArn: string; scheduledTime: number; executionId: string; attempt: number },
): string {
  return input
    .replaceAll('<aws.scheduler.schedule-arn>', values.scheduleArn)
    .replaceAll('<aws.scheduler.scheduled-time>', scheduledTimeText(values.scheduledTime))
    .replaceAll('<aws.scheduler.execution-id>', values.executionId)
    .replaceAll('<aws.scheduler.attempt-number>', String(values.attempt));
}

function fireOptions(s: StoredSchedule): { timezone: string; startMs?: number; endMs?: number } {
  const opts: { timezone: string; startMs?: number; endMs?: number } = { timezone: s.ScheduleExpressionTimezone };
  if (s.StartDate !== undefined) opts.startMs = s.StartDate;
  if (s.EndDate !== undefined) opts.endMs = s.EndDate;
  return opts;
}

/** The fire after `afterMs`; `rate()` is anchored at StartDate, else at the creation time. */
export function fireAfter(record: ScheduleRecord, afterMs: number): number | undefined {
  const opts = fireOptions(record.schedule);
  if (record.parsed.kind === 'rate' && opts.startMs === undefined) opts.startMs = record.schedule.CreationDate;
  return nextFireTime(record.parsed, afterMs, opts);
}

/**
 * The first fire of a schedule created or updated at `now`: `at()` and `cron()` may fire at
 * `now` itself; `rate()` without StartDate first fires one period after creation.
 */
export function firstFire(record: ScheduleRecord, now: number): number | undefined {
  if (record.schedule.State !== 'ENABLED') return undefined;
  const noStart = record.parsed.kind === 'rate' && record.schedule.StartDate === undefined;
  return fireAfter(record, noStart ? now : now - 1);
}

export interface FiringEngineOptions {
  clock: Clock;
  deliver: Deliver;
  /** Current schedules. */
  records: () => Iterable<ScheduleRecord>;
  /** The schedule with this id, if it still exists. */
  lookup: (id: string) => ScheduleRecord | undefined;
  /** Deletes a completed schedule whose ActionAfterCompletion is DELETE. */
  remove: (record: ScheduleRecord) => void;
  log: (line: string) => void;
}

/** Delivers due fires in time order, one round at a time (rounds never overlap). */
export class FiringEngine {
  private retries: PendingFire[] = [];
  private tail: Promise<unknown> = Promise.resolve();
  private seq = 0;

  constructor(private readonly opts: FiringEngineOptions) {}

  /** Queues a round after any running one; resolves to the fires it delivered. */
  fireDue(): Promise<number> {
    const run = this.tail.then(() => this.round());
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** Resolves when no round is running or queued. */
  async idle(): Promise<void> {
    await this.tail;
  }

  private async round(): Promise<number> {
    const now = this.opts.clock.now();
    const due = this.retries;
    this.retries = [];
    for (const record of this.opts.records()) this.collect(record, now, due);
    due.sort((a, b) => a.scheduledTime - b.scheduledTime || a.seq - b.seq);
    let delivered = 0;
    for (const fire of due) {
      if (!this.opts.lookup(fire.recordId)) continue; // deleted since it became due
      if (await this.attempt(fire)) delivered++;
    }
    return delivered;
  }

  private collect(record: ScheduleRecord, now: number, due: PendingFire[]): void {
    const s = record.schedule;
    if (s.State !== 'ENABLED') return;
    let count = 0;
    while (s.nextFireAt !== undefined && s.nextFireAt <= now) {
      if (count === MAX_FIRES_PER_ROUND) {
        this.opts.log(
          `${s.Arn}: more than ${MAX_FIRES_PER_ROUND} fires due at once; the rest follow on the next fireDue()`,
        );
        return;
      }
      const scheduledTime = s.nextFireAt;
      s.nextFireAt = fireAfter(record, scheduledTime);
      if (s.nextFireAt === undefined) record.completed = true;
      due.push({
        recordId: record.id,
        scheduleArn: s.Arn,
        name: s.Name,
        group: s.GroupName,
        target: structuredClone(s.Target),
        scheduledTime,
        attempt: 1,
        seq: this.seq++,
        final: s.nextFireAt === undefined,
      });
      count++;
    }
  }

  private async attempt(fire: PendingFire): Promise<boolean> {
    const executionId = randomUUID();
    const target: SchedulerTarget = structuredClone(fire.target);
    if (target.Input !== undefined) target.Input = fillPlaceholders(target.Input, { ...fire, executionId });
    try {
      await this.opts.deliver({
        scheduleArn: fire.scheduleArn,
        name: fire.name,
        group: fire.group,
        target,
        scheduledTime: fire.scheduledTime,
        attempt: fire.attempt,
        executionId,
      });
      this.finish(fire);
      return true;
    } catch (err) {
      const policy = fire.target.RetryPolicy ?? {};
      const maxRetries = policy.MaximumRetryAttempts ?? 185;
      const maxAgeMs = (policy.MaximumEventAgeInSeconds ?? 86_400) * 1000;
      const tooOld = this.opts.clock.now() - fire.scheduledTime > maxAgeMs;
      if (fire.attempt > maxRetries || tooOld) {
        const why = tooOld ? 'it is older than MaximumEventAgeInSeconds' : `${fire.attempt} attempt(s) failed`;
        this.opts.log(
          `dropping the ${scheduledTimeText(fire.scheduledTime)} fire of ${fire.scheduleArn}: ${why}; last error: ${String(err)}`,
        );
        this.finish(fire);
      } else {
        this.retries.push({ ...fire, attempt: fire.attempt + 1 });
      }
      return false;
    }
  }

  /** After a schedule's last fire is settled, applies ActionAfterCompletion = DELETE. */
  private finish(fire: PendingFire): void {
    if (!fire.final) return;
    const record = this.opts.lookup(fire.recordId);
    if (record?.completed && record.schedule.ActionAfterCompletion === 'DELETE') this.opts.remove(record);
  }
}
