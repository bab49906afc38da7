/**
 * Job priorities: which waiting job a freed place goes to (see docs/flow-control.md, "Priorities").
 *
 * A job's priority is an integer from 0 to {@link MAX_PRIORITY}; higher goes first. It orders the
 * lines where jobs wait for capacity: a concurrency limit's or a singleton's. Where a type has no
 * such limit, SQS and Lambda start its jobs as they come, and a priority changes nothing: the
 * type's spec refuses `priority` then.
 *
 * **Aging, as a head start.** A job's rank is its due time minus `priority × agingSeconds`: a job
 * of priority 3 is served as if it had been due 3 × `agingSeconds` earlier. The line is served
 * lowest rank first, oldest first within a rank. So a rank is fixed when the job joins the line,
 * nothing is rewritten while it waits, and the wait is bounded:
 *
 * - **Starvation bound.** A job of priority `p` due at `d` is passed only by jobs due no later
 *   than `d + (MAX_PRIORITY − p) × agingSeconds` (300 s with the defaults, for priority 0). Every
 *   job due later ranks behind it, whatever its priority. So it starts once the jobs ranked ahead of it when
 *   that window closes have been served: the line is finite, and no stream of high-priority
 *   work can hold it back for ever ({@link passWindowMs}).
 * - Within one priority the line is oldest first, as it is without priorities.
 */
import { ValidationError } from '../errors';

/** Highest priority. Priorities are integers 0 (the default) to this. */
export const MAX_PRIORITY = 10;
/** How much earlier one step of priority counts a job as due: the head start per step. */
export const DEFAULT_AGING_SECONDS = 30;
/** Largest `agingSeconds`: a day per step (ten days' head start at the top). */
export const MAX_AGING_SECONDS = 86_400;

/** A job type's priorities (the spec's `priority`). */
export interface PriorityOptions {
  /**
   * A job's priority when its enqueue gives none, 0 to {@link MAX_PRIORITY}; higher goes first.
   * @default 0
   */
  readonly default?: number;
  /**
   * The head start each step of priority gives, in seconds: a job of priority `p` is served as if
   * it had been due `p × agingSeconds` earlier. Larger makes priorities stricter; the starvation
   * bound grows with it ({@link passWindowMs}).
   * @default 30
   */
  readonly agingSeconds?: number;
}

/** The options with their defaults. */
export function priorityOf(options: PriorityOptions): { default: number; agingSeconds: number } {
  return { default: options.default ?? 0, agingSeconds: options.agingSeconds ?? DEFAULT_AGING_SECONDS };
}

/** Whether `value` is a priority: an integer 0 to {@link MAX_PRIORITY}. */
export function isPriority(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_PRIORITY;
}

/** What is wrong with a spec's `priority` option, or undefined when it is usable. */
export function priorityProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return 'priority must be an object: { default?, agingSeconds? }';
  }
  const { default: byDefault, agingSeconds, ...rest } = value as Record<string, unknown>;
  const unknownKey = Object.keys(rest)[0];
  if (unknownKey !== undefined) return `priority has no option "${unknownKey}" (it takes default and agingSeconds)`;
  if (byDefault !== undefined && !isPriority(byDefault)) {
    return `priority.default must be an integer from 0 to ${MAX_PRIORITY}`;
  }
  if (
    agingSeconds !== undefined &&
    (typeof agingSeconds !== 'number' ||
      !Number.isFinite(agingSeconds) ||
      agingSeconds <= 0 ||
      agingSeconds > MAX_AGING_SECONDS)
  ) {
    return `priority.agingSeconds must be a number of seconds above 0 and at most ${MAX_AGING_SECONDS}`;
  }
  return undefined;
}

/**
 * The priority an enqueue gives, checked: 400 `invalid_priority` (field `priority`) when it is
 * not an integer 0 to {@link MAX_PRIORITY}, or when the type takes no priority.
 */
export function checkPriority(value: unknown, typeTakesPriority: boolean, path = 'priority'): number {
  if (!typeTakesPriority) {
    throw new ValidationError(
      'this job type has no priority option: priorities order the line of a concurrency or singleton limit, or a throttle',
      [{ path, message: 'the type takes no priority' }],
      'invalid_priority',
    );
  }
  if (!isPriority(value)) {
    throw new ValidationError(
      `priority must be an integer from 0 to ${MAX_PRIORITY}`,
      [{ path, message: `must be an integer from 0 to ${MAX_PRIORITY}` }],
      'invalid_priority',
    );
  }
  return value;
}

/**
 * A new job's priority: the one its enqueue (or its schedule) gives, checked with
 * {@link checkPriority}, else the type's default; undefined for a type without the option, whose
 * jobs carry none (not a byte of it in their item).
 *
 * @example
 * resolvePriority({ default: 2 }, undefined); // 2
 * resolvePriority({ default: 2 }, 7);         // 7
 * resolvePriority(undefined, undefined);      // undefined
 * resolvePriority(undefined, 7, 'jobs.3.priority'); // throws 400 invalid_priority on jobs.3.priority
 */
export function resolvePriority(
  options: PriorityOptions | undefined,
  given: unknown,
  path = 'priority',
): number | undefined {
  if (given !== undefined) return checkPriority(given, options !== undefined, path);
  return options === undefined ? undefined : priorityOf(options).default;
}

/** A job's rank in a line (epoch ms; lower is served first): its due time less its head start. */
export function rankOf(input: { dueAt: number; priority: number; agingSeconds: number }): number {
  return input.dueAt - input.priority * input.agingSeconds * 1000;
}

/** Digits of a rank in a {@link rankKey}: epoch ms up to the year 33658. */
const RANK_DIGITS = 15;

/**
 * A line entry's sort key: the rank, fixed-width, then the job id, so that sorting the keys as
 * strings sorts by rank, then by id (two jobs of one rank keep one order everywhere).
 */
export function rankKey(rank: number, jobId: string): string {
  const clamped = Math.min(10 ** RANK_DIGITS - 1, Math.max(0, Math.round(rank)));
  return `${String(clamped).padStart(RANK_DIGITS, '0')}#${jobId}`;
}

/**
 * How long after a job of priority `p` became due another job may become due and still be
 * served before it (the starvation bound's window): `(MAX_PRIORITY − p) × agingSeconds`.
 */
export function passWindowMs(priority: number, agingSeconds: number): number {
  return (MAX_PRIORITY - priority) * agingSeconds * 1000;
}

/**
 * The entry key of a job in its type's ranked lines ({@link rankKey} of {@link rankOf}), from its
 * runAt (written by the API's clock, so workers' clock skew does not enter) and its priority
 * (the type's default when the job has none, e.g. one written before the type took priorities).
 */
export function jobRank(options: PriorityOptions, job: { id: string; runAt: string; priority?: number }): string {
  const { default: byDefault, agingSeconds } = priorityOf(options);
  const priority = isPriority(job.priority) ? job.priority : byDefault;
  return rankKey(rankOf({ dueAt: Date.parse(job.runAt), priority, agingSeconds }), job.id);
}

/**
 * The rank a job waits under, when its type's lines are ranked: a type with priorities, or one
 * whose limit is shared fairly (`fairBy`; without priorities, its rank is its due time, so each
 * fair key's line is oldest first). Undefined for a type whose lines are oldest-first tickets.
 */
export function lineRank(
  spec: { priority?: PriorityOptions; concurrency?: readonly { limit: number; fairBy?: unknown }[] },
  job: { id: string; runAt: string; priority?: number },
): string | undefined {
  if (spec.priority) return jobRank(spec.priority, job);
  if (spec.concurrency?.some((l) => l.fairBy !== undefined)) return jobRank({}, { id: job.id, runAt: job.runAt });
  return undefined;
}

/** The time a rank key stands for (epoch ms): the digits before its `#`. */
export function rankTime(rank: string): number {
  return Number(rank.slice(0, rank.indexOf('#')));
}
