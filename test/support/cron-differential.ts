/**
 * Differential comparison of the two cron evaluators: ours (`nextFireTime`, the production path)
 * and croner behind `./schedule-expression-croner.ts`.
 *
 * croner schedules daylight-saving changes as Vixie cron does, EventBridge Scheduler does not
 * (docs/schedules-cron.md). A croner fire is put into one of two known classes when it is one
 * EventBridge would not make, and only under croner's documented condition for it:
 *
 * - `gap-end`: a fixed-time job (one minute value and one hour value) whose time falls in a
 *   spring-forward gap; croner runs it when the clocks jump, at a wall time the expression does
 *   not name. EventBridge skips it.
 * - `repeat`: any other job, at a wall time that occurs twice (fall back); croner runs both
 *   occurrences. EventBridge runs the first only.
 *
 * Every other croner fire must be exactly ours, in the same order.
 */
import { nextFireTime, type ParsedExpression, parseScheduleExpression } from '../../shared/core/schedule-expression';
import type { CronSpec } from '../../shared/core/schedule-expression-cron';
import { offsetAt, resolveWallTime, wallTimeOf } from '../../shared/core/schedule-expression-zone';
import type { CronCase } from './cron-cases';
import { nextCronInstantCroner } from './schedule-expression-croner';

type CronExpression = Extract<ParsedExpression, { kind: 'cron' }>;

/** An evaluator: the first fire strictly after `afterMs`, or undefined. */
export type NextFire = (parsed: CronExpression, afterMs: number, timeZone: string) => number | undefined;

export const ours: NextFire = (parsed, afterMs, timeZone) => nextFireTime(parsed, afterMs, { timezone: timeZone });
export const croner: NextFire = (parsed, afterMs, timeZone) => nextCronInstantCroner(parsed.fields, afterMs, timeZone);

export type DifferenceClass = 'gap-end' | 'repeat';

/** The result of one case. `agree` is whether croner, less its explained fires, gave ours. */
export interface Comparison {
  ours: number[];
  croner: number[];
  explained: { kind: DifferenceClass; at: number }[];
  agree: boolean;
}

/** Whether the job is a fixed-time job in croner's default sense (`fixedTimeRule: 'single-value'`). */
function isFixedTime(spec: CronSpec): boolean {
  return spec.minutes.length === 1 && spec.hours.length === 1;
}

/** The known class of a croner fire that EventBridge would not make, or undefined. */
export function classify(spec: CronSpec, at: number, timeZone: string): DifferenceClass | undefined {
  const wall = wallTimeOf(at, timeZone);
  const named = spec.minutes.includes(wall.minute) && spec.hours.includes(wall.hour);
  if (!named && isFixedTime(spec) && offsetAt(at - 1000, timeZone) < offsetAt(at, timeZone)) {
    // The clocks jumped at `at`: the named time that day must be one that does not exist.
    const meant = { ...wall, hour: spec.hours[0] ?? -1, minute: spec.minutes[0] ?? -1, second: 0 };
    if (resolveWallTime(meant, timeZone) === undefined) return 'gap-end';
  }
  if (named && !isFixedTime(spec)) {
    const first = resolveWallTime(wall, timeZone);
    if (first !== undefined && first < at) return 'repeat';
  }
  return undefined;
}

/** The next `count` fires of both evaluators from `c.afterMs`, croner's known classes set apart. */
export function compareCase(c: CronCase, count: number, evaluators = { ours, croner }): Comparison {
  const parsed = parseScheduleExpression(c.expression);
  if (parsed.kind !== 'cron') throw new Error(`not a cron expression: ${c.expression}`);
  const result: Comparison = { ours: [], croner: [], explained: [], agree: false };
  let after = c.afterMs;
  while (result.ours.length < count) {
    const at = evaluators.ours(parsed, after, c.timezone);
    if (at === undefined) break;
    result.ours.push(at);
    after = at;
  }
  after = c.afterMs;
  for (let steps = 0; result.croner.length < count && steps < count + 120; steps++) {
    const at = evaluators.croner(parsed, after, c.timezone);
    if (at === undefined) break;
    after = at;
    // Classifying costs time-zone look-ups: only a fire that is not ours needs it.
    const kind = at === result.ours[result.croner.length] ? undefined : classify(parsed.spec, at, c.timezone);
    if (kind) result.explained.push({ kind, at });
    else result.croner.push(at);
  }
  result.agree = result.ours.length === result.croner.length && result.ours.every((t, i) => t === result.croner[i]);
  return result;
}

/** A readable line for a case that disagrees (ISO instants). */
export function describeMismatch(c: CronCase, r: Comparison): string {
  const iso = (list: readonly number[]): string => list.map((t) => new Date(t).toISOString()).join(' ');
  return `${c.expression} in ${c.timezone} after ${new Date(c.afterMs).toISOString()}: ours [${iso(r.ours)}], croner [${iso(r.croner)}]`;
}
