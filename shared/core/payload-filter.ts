import { type FieldIssue, ValidationError } from '../errors';

/**
 * Payload search on `GET /jobs` (pure: no I/O): `payload.<dotted.path>=<value>` query
 * parameters, each matching the jobs whose payload holds exactly that value at that path.
 *
 * A value is compared in its string form: a string as itself, a number, boolean or `null` as its
 * JSON text (`42`, `true`, `null`). An object, an array or a missing path never matches. All
 * conditions must match (AND).
 */

/** Query parameters of this form name a payload condition. */
export const PAYLOAD_PARAM_PREFIX = 'payload.';
/** Conditions one listing may carry. */
export const MAX_PAYLOAD_CONDITIONS = 3;
/** Segments of one path (`a.b.c` has 3). */
export const MAX_PAYLOAD_PATH_SEGMENTS = 8;
/** Characters of one path. */
export const MAX_PAYLOAD_PATH_CHARS = 200;
/** Characters of one value. */
export const MAX_PAYLOAD_VALUE_CHARS = 256;
/** One path segment: an object key of letters, digits, `_` and `-`, or an array index. */
const SEGMENT = /^[A-Za-z0-9_-]{1,64}$/;

/** One condition: `path` (dotted, without the `payload.` prefix) equals `value`. */
export interface PayloadCondition {
  path: string;
  value: string;
}

/**
 * Splits a query into its payload conditions and the other parameters. The conditions are
 * validated here (one 400 naming each offending parameter); they come back sorted by path, so
 * the same conditions in another order make the same cursor.
 *
 * @example
 * splitPayloadConditions({ type: 'mail', 'payload.to.domain': 'example.com' });
 * // { conditions: [{ path: 'to.domain', value: 'example.com' }], rest: { type: 'mail' } }
 */
export function splitPayloadConditions(query: Record<string, string>): {
  conditions: PayloadCondition[];
  rest: Record<string, string>;
} {
  const conditions: PayloadCondition[] = [];
  const rest: Record<string, string> = {};
  const issues: FieldIssue[] = [];
  for (const [name, value] of Object.entries(query)) {
    if (!name.startsWith(PAYLOAD_PARAM_PREFIX)) {
      rest[name] = value;
      continue;
    }
    const path = name.slice(PAYLOAD_PARAM_PREFIX.length);
    const segments = path.split('.');
    if (
      path.length === 0 ||
      path.length > MAX_PAYLOAD_PATH_CHARS ||
      segments.length > MAX_PAYLOAD_PATH_SEGMENTS ||
      !segments.every((segment) => SEGMENT.test(segment))
    ) {
      issues.push({
        path: name,
        message: `the path must be 1 to ${MAX_PAYLOAD_PATH_SEGMENTS} dot-separated keys of A-Z a-z 0-9 _ - (at most ${MAX_PAYLOAD_PATH_CHARS} characters)`,
      });
      continue;
    }
    if (value.length > MAX_PAYLOAD_VALUE_CHARS) {
      issues.push({ path: name, message: `the value must be at most ${MAX_PAYLOAD_VALUE_CHARS} characters` });
      continue;
    }
    conditions.push({ path, value });
  }
  if (conditions.length + issues.length > MAX_PAYLOAD_CONDITIONS) {
    issues.push({
      path: PAYLOAD_PARAM_PREFIX.slice(0, -1),
      message: `at most ${MAX_PAYLOAD_CONDITIONS} payload.<path> conditions`,
    });
  }
  if (issues.length > 0) throw new ValidationError('invalid payload filter', issues);
  conditions.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { conditions, rest };
}

/** The string form a payload value is compared in, or undefined for a value that never matches. */
export function comparableForm(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return JSON.stringify(value);
  return undefined;
}

/** The value at a dotted path (object keys; array indexes as digits), or undefined. */
export function valueAt(payload: unknown, path: string): unknown {
  let current: unknown = payload;
  for (const segment of path.split('.')) {
    if (current === null || typeof current !== 'object') return undefined;
    if (Array.isArray(current)) {
      if (!/^\d+$/.test(segment)) return undefined;
      current = current[Number(segment)];
    } else {
      if (!Object.hasOwn(current, segment)) return undefined;
      current = (current as Record<string, unknown>)[segment];
    }
  }
  return current;
}

/** Whether `payload` meets every condition (true for no conditions). */
export function payloadMatches(payload: unknown, conditions: readonly PayloadCondition[]): boolean {
  return conditions.every((condition) => comparableForm(valueAt(payload, condition.path)) === condition.value);
}
