/**
 * Compiled AWS cron expressions and their evaluation. Parsing lives in `schedule-expression.ts`
 * (which owns the error type); import the public API from there.
 */
import { awsWeekday, daysInMonth, resolveWallTime, wallTimeOf } from './schedule-expression-zone';

/** Day-of-month rule of an AWS cron expression. */
export type DayOfMonthRule =
  /** `?`: the day-of-week field decides. */
  | { kind: 'any' }
  /** Explicit days (`*`, lists, ranges, steps); days past the end of a month never match. */
  | { kind: 'days'; days: readonly number[] }
  /** `L`: the last day of the month. */
  | { kind: 'last' }
  /** `LW`: the last weekday (Monday–Friday) of the month. */
  | { kind: 'lastWeekday' }
  /** `15W`: the weekday nearest to the 15th, never crossing into another month. */
  | { kind: 'nearestWeekday'; day: number };

/** Day-of-week rule of an AWS cron expression, in AWS numbering (1 = Sunday … 7 = Saturday). */
export type DayOfWeekRule =
  /** `?`: the day-of-month field decides. */
  | { kind: 'any' }
  /** Explicit weekdays (`*`, lists, ranges, names; a lone `L` is Saturday). */
  | { kind: 'days'; days: readonly number[] }
  /** `6L`: the last given weekday of the month (here the last Friday). */
  | { kind: 'last'; weekday: number }
  /** `2#1`: the nth given weekday of the month (here the first Monday). */
  | { kind: 'nth'; weekday: number; nth: number };

/** A cron expression compiled to sorted value lists. */
export interface CronSpec {
  minutes: readonly number[];
  hours: readonly number[];
  dayOfMonth: DayOfMonthRule;
  months: readonly number[];
  dayOfWeek: DayOfWeekRule;
  years: readonly number[];
}

function isWeekend(year: number, month: number, day: number): boolean {
  const weekday = awsWeekday(year, month, day);
  return weekday === 1 || weekday === 7;
}

function nearestWeekday(year: number, month: number, day: number): number | undefined {
  const last = daysInMonth(year, month);
  if (day > last) return undefined;
  const weekday = awsWeekday(year, month, day);
  if (weekday === 7) return day === 1 ? 3 : day - 1; // Saturday: Friday before, or Monday after the 1st
  if (weekday === 1) return day === last ? day - 2 : day + 1; // Sunday: Monday after, or Friday before the last
  return day;
}

function dayMatchesDom(rule: DayOfMonthRule, year: number, month: number, day: number): boolean {
  switch (rule.kind) {
    case 'any':
      return true;
    case 'days':
      return rule.days.includes(day);
    case 'last':
      return day === daysInMonth(year, month);
    case 'lastWeekday': {
      let last = daysInMonth(year, month);
      while (isWeekend(year, month, last)) last--;
      return day === last;
    }
    case 'nearestWeekday':
      return nearestWeekday(year, month, rule.day) === day;
  }
}

function dayMatchesDow(rule: DayOfWeekRule, year: number, month: number, day: number): boolean {
  const weekday = awsWeekday(year, month, day);
  switch (rule.kind) {
    case 'any':
      return true;
    case 'days':
      return rule.days.includes(weekday);
    case 'last':
      return weekday === rule.weekday && day + 7 > daysInMonth(year, month);
    case 'nth':
      return weekday === rule.weekday && Math.floor((day - 1) / 7) + 1 === rule.nth;
  }
}

/** The days of `month` in `year` that the expression selects, ascending. */
export function matchingDays(spec: CronSpec, year: number, month: number): number[] {
  const days: number[] = [];
  const last = daysInMonth(year, month);
  for (let day = 1; day <= last; day++) {
    if (dayMatchesDom(spec.dayOfMonth, year, month, day) && dayMatchesDow(spec.dayOfWeek, year, month, day)) {
      days.push(day);
    }
  }
  return days;
}

/**
 * First instant strictly after `afterMs` that matches `spec` on the wall clock of `timeZone`.
 *
 * Walks the calendar field by field (year → month → matching days → hour → minute), so a
 * yearly expression costs a handful of steps, not a minute-by-minute scan. Wall times inside a
 * spring-forward gap are skipped; a wall time that occurs twice fires at its first occurrence only.
 */
export function nextCronInstant(spec: CronSpec, afterMs: number, timeZone: string): number | undefined {
  const start = wallTimeOf(afterMs, timeZone);
  for (const year of spec.years) {
    if (year < start.year) continue;
    const sameYear = year === start.year;
    for (const month of spec.months) {
      if (sameYear && month < start.month) continue;
      const sameMonth = sameYear && month === start.month;
      for (const day of matchingDays(spec, year, month)) {
        if (sameMonth && day < start.day) continue;
        const sameDay = sameMonth && day === start.day;
        for (const hour of spec.hours) {
          if (sameDay && hour < start.hour) continue;
          const sameHour = sameDay && hour === start.hour;
          for (const minute of spec.minutes) {
            if (sameHour && minute < start.minute) continue;
            const instant = resolveWallTime({ year, month, day, hour, minute, second: 0 }, timeZone);
            // undefined: the wall time is skipped by a DST change; <= afterMs: the first
            // occurrence of a repeated wall time that already passed.
            if (instant !== undefined && instant > afterMs) return instant;
          }
        }
      }
    }
  }
  return undefined;
}
