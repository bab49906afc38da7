/**
 * Seeded generator of valid EventBridge cron expressions, time zones and start instants for the
 * differential test of the cron evaluators (test/unit/cron-differential.test.ts).
 *
 * The mix leans towards what is easy to get wrong: the early-morning hours in which clocks
 * change, start instants just before and inside daylight-saving transitions, `L`, `W`, `#`,
 * steps with a start (`5/15`), names, and year ranges.
 */
import { offsetAt } from '../../shared/core/schedule-expression-zone';
import { seeded } from '../chaos/seeded';

/**
 * Zones with every kind of change: none (UTC, Kolkata), one hour at 02:00 (New York, Berlin) or
 * 01:00 (London), half an hour (Lord Howe), at 02:45 (Chatham), at midnight (Santiago, Havana),
 * a half-hour base offset with DST (St John's), and a negative summer change (Casablanca, whose
 * clocks go back for Ramadan).
 */
export const ZONES = [
  'UTC',
  'America/New_York',
  'Europe/London',
  'Europe/Berlin',
  'Australia/Lord_Howe',
  'Asia/Kolkata',
  'Pacific/Chatham',
  'America/Santiago',
  'America/Havana',
  'America/St_Johns',
  'Africa/Casablanca',
] as const;

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const WEEKDAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const HOUR_MS = 3_600_000;

/** One generated case: an expression, the zone it is read in, and the instant to start after. */
export interface CronCase {
  expression: string;
  timezone: string;
  afterMs: number;
}

type Random = () => number;

const int = (random: Random, min: number, max: number): number => min + Math.floor(random() * (max - min + 1));
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;

/** A value of a field, now and then written as a name. */
function value(random: Random, min: number, max: number, names?: readonly string[]): string {
  const v = int(random, min, max);
  return names && random() < 0.3 ? (names[v - min] as string) : String(v);
}

/** One list item: a value, a range, a step from a value, a range with a step, or `*` with a step. */
function item(random: Random, min: number, max: number, opts: { names?: readonly string[]; steps: boolean }): string {
  const r = random();
  if (r < 0.45) return value(random, min, max, opts.names);
  if (r < 0.7 || !opts.steps) {
    const a = int(random, min, max);
    const b = int(random, a, max);
    const name = (v: number): string => (opts.names && random() < 0.3 ? (opts.names[v - min] as string) : String(v));
    return `${name(a)}-${name(b)}`;
  }
  const step = random() < 0.8 ? int(random, 1, Math.max(1, Math.ceil((max - min) / 2))) : int(random, 1, max + 5);
  if (r < 0.85) return `${int(random, min, max)}/${step}`;
  if (r < 0.95) {
    const a = int(random, min, max);
    return `${a}-${int(random, a, max)}/${step}`;
  }
  return `*/${step}`;
}

/** A plain field: `*` with probability `star`, otherwise a list of one to three items. */
function field(
  random: Random,
  min: number,
  max: number,
  star: number,
  opts: { names?: readonly string[]; steps: boolean },
): string {
  if (random() < star) return '*';
  const count = random() < 0.7 ? 1 : int(random, 2, 3);
  return Array.from({ length: count }, () => item(random, min, max, opts)).join(',');
}

/** Hours, leaning towards 00–04 (when clocks change) and to single hours (fixed-time jobs). */
function hours(random: Random): string {
  const r = random();
  if (r < 0.35) return String(int(random, 0, 4));
  if (r < 0.45) return `${int(random, 0, 2)}-${int(random, 2, 5)}`;
  return field(random, 0, 23, 0.3, { steps: true });
}

/** Minutes, leaning towards single values and the quarter hours (Lord Howe, Chatham). */
function minutes(random: Random): string {
  const r = random();
  if (r < 0.3) return pick(random, ['0', '15', '30', '45']);
  if (r < 0.5) return String(int(random, 0, 59));
  return field(random, 0, 59, 0.1, { steps: true });
}

function dayOfMonth(random: Random): string {
  const r = random();
  if (r < 0.45) return '*';
  if (r < 0.55) return 'L';
  if (r < 0.62) return 'LW';
  if (r < 0.72) return `${int(random, 1, 31)}W`;
  return field(random, 1, 31, 0, { steps: true });
}

function dayOfWeek(random: Random): string {
  const r = random();
  if (r < 0.3) return '*';
  if (r < 0.36) return 'L';
  if (r < 0.46) return `${value(random, 1, 7, WEEKDAYS)}L`;
  if (r < 0.58) return `${value(random, 1, 7, WEEKDAYS)}#${int(random, 1, 5)}`;
  return field(random, 1, 7, 0, { names: WEEKDAYS, steps: false });
}

function year(random: Random): string {
  const r = random();
  if (r < 0.75) return '*';
  if (r < 0.85) return String(int(random, 2026, 2032));
  if (r < 0.93) return `${int(random, 2026, 2028)}-${int(random, 2028, 2040)}`;
  return `${int(random, 2026, 2030)}/${int(random, 1, 4)}`;
}

/** A valid six-field EventBridge cron expression (`?` in exactly one day field). */
export function cronExpression(random: Random): string {
  const month = random() < 0.6 ? '*' : field(random, 1, 12, 0, { names: MONTHS, steps: true });
  const [dom, dow] = random() < 0.5 ? [dayOfMonth(random), '?'] : ['?', dayOfWeek(random)];
  return `cron(${minutes(random)} ${hours(random)} ${dom} ${month} ${dow} ${year(random)})`;
}

/** Instants in [fromMs, toMs) at which `timeZone` changes its UTC offset, to the second. */
export function offsetChanges(timeZone: string, fromMs: number, toMs: number): number[] {
  const changes: number[] = [];
  // Zones change at most once in three days (Casablanca's Ramadan changes are a month apart).
  const stepMs = 72 * HOUR_MS;
  for (let t = fromMs; t < toMs; t += stepMs) {
    if (offsetAt(t, timeZone) === offsetAt(t + stepMs, timeZone)) continue;
    let lo = t;
    let hi = t + stepMs;
    while (hi - lo > 1000) {
      const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
      if (offsetAt(mid, timeZone) === offsetAt(lo, timeZone)) lo = mid;
      else hi = mid;
    }
    changes.push(hi);
  }
  return changes;
}

const WINDOW_FROM = Date.UTC(2026, 0, 1);
const WINDOW_TO = Date.UTC(2028, 0, 1);

/**
 * `count` expressions, each read in `zonesPerExpression` different zones. Where the zone changes
 * its offset, most start instants lie from 36 hours before a change to 2 hours after it (so
 * the next fires cross it, or start inside a repeated hour); the rest anywhere in 2026–2027.
 */
export function cronCases(seed: number, count: number, zonesPerExpression: number): CronCase[] {
  const random = seeded(seed);
  const changes = new Map<string, number[]>(
    ZONES.map((zone) => [zone, offsetChanges(zone, WINDOW_FROM, WINDOW_TO)] as const),
  );
  const cases: CronCase[] = [];
  for (let i = 0; i < count; i++) {
    const expression = cronExpression(random);
    const first = int(random, 0, ZONES.length - 1);
    for (let z = 0; z < zonesPerExpression; z++) {
      const timezone = ZONES[(first + z * 3) % ZONES.length] as string;
      const near = changes.get(timezone) ?? [];
      const afterMs =
        near.length > 0 && random() < 0.85
          ? pick(random, near) - int(random, -2 * 60, 36 * 60) * 60_000 - int(random, 0, 59_999)
          : int(random, WINDOW_FROM / 1000, WINDOW_TO / 1000) * 1000 + int(random, 0, 999);
      cases.push({ expression, timezone, afterMs });
    }
  }
  return cases;
}
