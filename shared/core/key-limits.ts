/**
 * Limits set at run time for one key value of a job type (`PUT /types/{type}/keys/{key}/limits`):
 * which of the type's concurrency limits a request names, and whether its value is usable. Pure:
 * the API checks a request here before it writes anything, and answers 400 `invalid_limits`
 * naming the field otherwise. A key's concurrency limit, its weight (for a type with a limit shared
 * fairly, `fairBy`), and its throttle or rate limit (for a type with one) can be set.
 */
import { ValidationError } from '../errors';
import { fairWeightProblem, MAX_FAIR_WEIGHT } from './fair-share';
import {
  type ConcurrencyLimit,
  flowKeyProblem,
  MAX_CONCURRENCY_LIMIT,
  type Slot,
  slotsOf,
  WHOLE_TYPE_KEY,
} from './flow';
import { type Pace, paceProblem, paceScope, rateLimitPace, throttlePace } from './pace';

/** The error code of a request whose limits cannot be set. */
export const INVALID_LIMITS = 'invalid_limits';

/** The fields `PUT /types/{type}/keys/{key}/limits` takes. */
const FIELDS = ['concurrency', 'limit', 'weight', 'throttle', 'rateLimit'];

/** What a `DELETE …/limits` removes (`?field=`). */
export const KEY_LIMIT_FIELDS = ['concurrency', 'weight', 'throttle', 'rateLimit'] as const;
export type KeyLimitField = (typeof KEY_LIMIT_FIELDS)[number];

/** A checked request: what it sets, each with its slot. */
export interface KeyLimitTarget {
  /** The concurrency limit to set on limit `index`'s slot (`<type>#<index>` and the key, `*` for a limit without a key function). */
  concurrency?: { index: number; slot: Slot; limit: number };
  /** The weight to set for the key (a fair key) on the type's fair limit `index` (its slot's key is `*`). */
  weight?: { index: number; slot: Slot; fairKey: string; weight: number };
  /** The throttle to set on the key, in place of the spec's (`spec`: the spec's pace). */
  throttle?: PaceTarget;
  /** The rate limit to set on the key, in place of the spec's. */
  rateLimit?: PaceTarget;
}

/** A throttle or rate limit of one key, as a request sets it. */
export interface PaceTarget {
  scope: string;
  key: string;
  limit: number;
  periodSeconds: number;
  burst?: number;
  pace: Pace;
  /** The spec's pace, which a removal falls back to. */
  spec: Pace;
}

type PacedSpec = {
  throttle?: { limit: number; periodSeconds: number; burst?: number; key?: unknown };
  rateLimit?: { limit: number; periodSeconds: number; key?: unknown };
};

/**
 * The pace slot of the type's throttle or rate limit (`what`) for `key`. Throws ValidationError
 * (`invalid_limits`) when the type has none, or the key cannot be one of its keys (`*` for one
 * without a key function).
 */
export function paceTarget(
  type: string,
  spec: PacedSpec,
  what: 'throttle' | 'rateLimit',
  key: string,
): Omit<PaceTarget, 'limit' | 'periodSeconds' | 'burst' | 'pace'> {
  const options = spec[what];
  if (!options) return invalid(what, `cannot be set: job type ${type} has no ${what}`);
  const problem = flowKeyProblem(key);
  if (problem) invalid('key', problem);
  if (options.key === undefined && key !== WHOLE_TYPE_KEY) {
    invalid('key', `must be ${JSON.stringify(WHOLE_TYPE_KEY)}: the ${what} has no key function`);
  }
  const specPace = what === 'throttle' ? throttlePace(options) : rateLimitPace(options);
  return { scope: paceScope(type, what), key, spec: specPace };
}

/** A `throttle` or `rateLimit` field of a `PUT …/limits` body, checked as the spec's is. */
function paceField(
  type: string,
  spec: PacedSpec,
  what: 'throttle' | 'rateLimit',
  key: string,
  value: unknown,
): PaceTarget {
  const target = paceTarget(type, spec, what, key);
  if (typeof value === 'object' && value !== null && 'key' in value)
    invalid(what, 'takes no key (the key is in the path)');
  const problem = paceProblem(value, what);
  if (problem) invalid(what, problem.replace(new RegExp(`^${what}\\.?`), ''));
  const { limit, periodSeconds, burst } = value as { limit: number; periodSeconds: number; burst?: number };
  const pace =
    what === 'throttle'
      ? throttlePace({ limit, periodSeconds, ...(burst === undefined ? {} : { burst }) })
      : rateLimitPace({ limit, periodSeconds });
  return { ...target, limit, periodSeconds, ...(burst === undefined ? {} : { burst }), pace };
}

type Limits = readonly Pick<ConcurrencyLimit<unknown>, 'limit' | 'key' | 'fairBy' | 'weight'>[] | undefined;

const invalid = (path: string, message: string): never => {
  throw new ValidationError(`these limits cannot be set: ${path} ${message}`, [{ path, message }], INVALID_LIMITS);
};

/**
 * Which limit `limit` (an index) names, or the default: the first limit with a key function,
 * or the only limit. Throws ValidationError (`invalid_limits`) for a type without concurrency
 * limits, an index out of range, or a key unusable for that limit (`*` for one without a key).
 *
 * @example
 * keyLimitIndex(spec.type, spec.concurrency, 'tenant-42', undefined); // 0, the first keyed limit
 */
export function keyLimitIndex(type: string, limits: Limits, key: string, limit: unknown): number {
  if (!limits || limits.length === 0) {
    return invalid('concurrency', `cannot be set: job type ${type} has no concurrency limit`);
  }
  let index: number;
  if (limit === undefined) {
    const keyed = limits.findIndex((l) => l.key !== undefined);
    index = keyed >= 0 ? keyed : 0;
  } else if (typeof limit === 'number' && Number.isInteger(limit) && limit >= 0 && limit < limits.length) {
    index = limit;
  } else {
    return invalid(
      'limit',
      `must be the index of one of the type's ${limits.length} concurrency limits (0 to ${limits.length - 1})`,
    );
  }
  const problem = flowKeyProblem(key);
  if (problem) invalid('key', problem);
  if (!limits[index]?.key && key !== WHOLE_TYPE_KEY) {
    invalid('key', `must be ${JSON.stringify(WHOLE_TYPE_KEY)}: concurrency[${index}] has no key function`);
  }
  return index;
}

/**
 * The slot of the type's limit shared fairly, for fair key `key`, and its index. Throws
 * ValidationError (`invalid_limits`, field `field`) when the type has none, or the key is unusable.
 */
export function fairLimitSlot(
  type: string,
  limits: Limits,
  key: string,
  field = 'weight',
): { index: number; slot: Slot } {
  const index = limits?.findIndex((l) => l.fairBy !== undefined) ?? -1;
  if (!limits || index < 0) {
    return invalid(field, `cannot be set: job type ${type} has no concurrency limit shared fairly (fairBy)`);
  }
  const problem = flowKeyProblem(key);
  if (problem) invalid('key', problem);
  const keys = limits.map((_, i) => (i === index ? key : WHOLE_TYPE_KEY));
  return { index, slot: slotsOf(type, limits, keys)[index] as Slot };
}

/**
 * Checks a `PUT …/limits` body against the type's concurrency limits and the key: `concurrency`
 * (with `limit`, the index) sets a key's concurrency limit; `weight` sets the key's weight in the
 * type's limit shared fairly. At least one. Throws ValidationError (`invalid_limits`, naming the
 * field) for anything it cannot set; nothing is set then.
 *
 * @example
 * const target = keyLimitsRequest('tenant-sync', spec.concurrency, 'tenant-42', { concurrency: 5, weight: 3 });
 * if (target.concurrency) await flow.setLimit({ slot: target.concurrency.slot, limit: target.concurrency.limit, by, now });
 */
export function keyLimitsRequest(
  type: string,
  limits: Limits,
  key: string,
  body: unknown,
  paced: PacedSpec = {},
): KeyLimitTarget {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return invalid(
      '(body)',
      'must be an object: { "concurrency"?: <1 to 1000>, "limit"?: <index>, "weight"?: <number>, "throttle"?: {…}, "rateLimit"?: {…} }',
    );
  }
  const fields = body as Record<string, unknown>;
  for (const name of Object.keys(fields)) {
    if (!FIELDS.includes(name)) invalid(name, `is not a field here (${FIELDS.join(', ')})`);
  }
  if (['concurrency', 'weight', 'throttle', 'rateLimit'].every((name) => fields[name] === undefined)) {
    invalid('concurrency', 'or weight, throttle or rateLimit is required');
  }
  const out: KeyLimitTarget = {};
  for (const what of ['throttle', 'rateLimit'] as const) {
    if (fields[what] !== undefined) out[what] = paceField(type, paced, what, key, fields[what]);
  }
  if (fields.concurrency !== undefined || fields.limit !== undefined) {
    const index = keyLimitIndex(type, limits, key, fields.limit);
    const concurrency = fields.concurrency;
    if (
      typeof concurrency !== 'number' ||
      !Number.isInteger(concurrency) ||
      concurrency < 1 ||
      concurrency > MAX_CONCURRENCY_LIMIT
    ) {
      invalid('concurrency', `must be an integer from 1 to ${MAX_CONCURRENCY_LIMIT}`);
    }
    // the slot as a job sees it (a fair limit's with its weights): the raise hands places on by its rule
    const keys = (limits ?? []).map((l, i) => (i === index ? key : l.fairBy ? key : WHOLE_TYPE_KEY));
    const slot = slotsOf(type, limits ?? [], keys)[index] as Slot;
    out.concurrency = { index, slot, limit: concurrency as number };
  }
  if (fields.weight !== undefined) {
    const { index, slot } = fairLimitSlot(type, limits, key);
    const problem = fairWeightProblem(fields.weight);
    if (problem) invalid('weight', `${problem} (more than 0, at most ${MAX_FAIR_WEIGHT})`);
    out.weight = { index, slot, fairKey: key, weight: fields.weight as number };
  }
  return out;
}

/** The `?field=` of a `DELETE …/limits`: `concurrency` (the default), `weight`, `throttle` or `rateLimit`. */
export function keyLimitField(value: string | undefined): KeyLimitField {
  if (value === undefined) return 'concurrency';
  if ((KEY_LIMIT_FIELDS as readonly string[]).includes(value)) return value as KeyLimitField;
  return invalid('field', `must be one of ${KEY_LIMIT_FIELDS.join(', ')}`);
}
