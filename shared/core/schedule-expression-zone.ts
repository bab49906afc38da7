/**
 * Wall-clock arithmetic in IANA time zones, built on `Intl.DateTimeFormat` only (no tz database
 * dependency). Used by `schedule-expression.ts`; import the public API from there.
 *
 * Precision is one second, which is all schedule expressions need.
 */

/** A calendar date and time of day as read on a wall clock (month 1–12, day 1–31). */
export interface WallTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

const DAY_MS = 86_400_000;
const UTC_ZONES = new Set(['UTC', 'Etc/UTC', 'Etc/GMT', 'GMT', 'Etc/Universal', 'Etc/Zulu']);
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/**
 * Whether `tz` is an IANA time zone name this runtime knows (for example `Europe/Berlin`, `UTC`).
 * Offsets such as `+01:00` are rejected: EventBridge Scheduler takes zone names only.
 */
export function isValidTimeZone(tz: string): boolean {
  if (typeof tz !== 'string' || tz.length === 0 || tz.length > 50) return false;
  if (/^[+-]/.test(tz) || /\s/.test(tz)) return false;
  try {
    formatterFor(tz);
    return true;
  } catch {
    return false;
  }
}

function isUtc(timeZone: string): boolean {
  return UTC_ZONES.has(timeZone);
}

/** The wall time shown in `timeZone` at `instantMs` (truncated to the second). */
export function wallTimeOf(instantMs: number, timeZone: string): WallTime {
  if (isUtc(timeZone)) {
    const d = new Date(instantMs);
    return {
      year: d.getUTCFullYear(),
      month: d.getUTCMonth() + 1,
      day: d.getUTCDate(),
      hour: d.getUTCHours(),
      minute: d.getUTCMinutes(),
      second: d.getUTCSeconds(),
    };
  }
  const wall: WallTime = { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0 };
  for (const part of formatterFor(timeZone).formatToParts(instantMs)) {
    switch (part.type) {
      case 'year':
      case 'month':
      case 'day':
      case 'hour':
      case 'minute':
      case 'second':
        wall[part.type] = Number(part.value);
        break;
      default:
        break;
    }
  }
  return wall;
}

/** Wall time read as if it were UTC, in epoch milliseconds. */
export function wallTimeToUtcMs(wall: WallTime): number {
  return Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second);
}

/** UTC offset of `timeZone` at `instantMs`, in milliseconds (wall minus UTC). */
export function offsetAt(instantMs: number, timeZone: string): number {
  if (isUtc(timeZone)) return 0;
  const whole = Math.floor(instantMs / 1000) * 1000;
  return wallTimeToUtcMs(wallTimeOf(whole, timeZone)) - whole;
}

/**
 * The first instant at which `timeZone`'s clocks show `wall`, or `undefined` when that wall time
 * does not exist there (it falls in a daylight-saving "spring forward" gap). When the wall time
 * occurs twice ("fall back"), the earlier instant is returned.
 */
export function resolveWallTime(wall: WallTime, timeZone: string): number | undefined {
  const asUtc = wallTimeToUtcMs(wall);
  if (isUtc(timeZone)) return asUtc;
  // The offsets in force a day either side cover every offset that can apply to this wall time
  // (zones change offset at most once in any 48 hours).
  const offsets = new Set([
    offsetAt(asUtc - DAY_MS, timeZone),
    offsetAt(asUtc, timeZone),
    offsetAt(asUtc + DAY_MS, timeZone),
  ]);
  let best: number | undefined;
  for (const offset of offsets) {
    const candidate = asUtc - offset;
    if (candidate + offsetAt(candidate, timeZone) === asUtc && (best === undefined || candidate < best)) {
      best = candidate;
    }
  }
  return best;
}

/**
 * Like {@link resolveWallTime}, but a wall time inside a spring-forward gap resolves to the first
 * instant after the gap (the moment the clocks jump), for example 02:30 on a day New York skips
 * 02:00–02:59 resolves to 03:00 EDT.
 */
export function resolveWallTimeOrLater(wall: WallTime, timeZone: string): number {
  const exact = resolveWallTime(wall, timeZone);
  if (exact !== undefined) return exact;
  // Walk forward minute by minute on the wall clock (gaps are at most a day long) to the first
  // wall minute that exists; its first instant is the end of the gap.
  const base = wallTimeToUtcMs({ ...wall, second: 0 });
  for (let step = 1; step <= 24 * 60 + 1; step++) {
    const probe = new Date(base + step * 60_000);
    const resolved = resolveWallTime(
      {
        year: probe.getUTCFullYear(),
        month: probe.getUTCMonth() + 1,
        day: probe.getUTCDate(),
        hour: probe.getUTCHours(),
        minute: probe.getUTCMinutes(),
        second: 0,
      },
      timeZone,
    );
    if (resolved !== undefined) return resolved;
  }
  throw new RangeError(`cannot resolve wall time ${JSON.stringify(wall)} in ${timeZone}`);
}

/** Days in `month` (1–12) of `year`. */
export function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** Day of week of a calendar date in AWS numbering: 1 = Sunday … 7 = Saturday. */
export function awsWeekday(year: number, month: number, day: number): number {
  return new Date(Date.UTC(year, month - 1, day)).getUTCDay() + 1;
}
