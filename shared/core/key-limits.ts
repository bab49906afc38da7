/**
 * Limits set at run time for one key value of a job type (`PUT /types/{type}/keys/{key}/limits`):
 * which of the type's concurrency limits a request names, and whether its value is usable. Pure:
 * the API checks a request here before it writes anything, and answers 400 `invalid_limits`
 * naming the field otherwise. Only concurrency limits can be set yet: throttles, rate limits and
 * weights are fixed in the spec.
 */
import { ValidationError } from '../errors';
import { type ConcurrencyLimit, flowKeyProblem, MAX_CONCURRENCY_LIMIT, type Slot, WHOLE_TYPE_KEY } from './flow';

/** The error code of a request whose limits cannot be set. */
export const INVALID_LIMITS = 'invalid_limits';

/** The fields `PUT /types/{type}/keys/{key}/limits` takes. */
const FIELDS = ['concurrency', 'limit'];
/** Fields a later version may take: named apart, so the answer says they are not settable yet. */
const NOT_YET = ['throttle', 'rateLimit', 'weight'];

/** A checked request: the slot of the limit it sets, and the value. */
export interface KeyLimitTarget {
  /** The index of the type's concurrency limit. */
  index: number;
  /** The slot: `<type>#<index>` and the key value (`*` for a limit without a key function). */
  slot: Slot;
  /** The limit to set. */
  concurrency: number;
}

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
export function keyLimitIndex(
  type: string,
  limits: readonly Pick<ConcurrencyLimit<unknown>, 'limit' | 'key'>[] | undefined,
  key: string,
  limit: unknown,
): number {
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
 * Checks a `PUT …/limits` body against the type's concurrency limits and the key. Throws
 * ValidationError (`invalid_limits`, naming the field) for anything it cannot set.
 *
 * @example
 * const target = keyLimitsRequest('tenant-sync', spec.concurrency, 'tenant-42', { concurrency: 5 });
 * await flow.setLimit({ slot: target.slot, limit: target.concurrency, by, now });
 */
export function keyLimitsRequest(
  type: string,
  limits: readonly Pick<ConcurrencyLimit<unknown>, 'limit' | 'key'>[] | undefined,
  key: string,
  body: unknown,
): KeyLimitTarget {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return invalid('(body)', 'must be an object: { "concurrency": <1 to 1000>, "limit"?: <index> }');
  }
  const fields = body as Record<string, unknown>;
  for (const name of Object.keys(fields)) {
    if (NOT_YET.includes(name)) invalid(name, 'cannot be set at run time yet (only concurrency can)');
    if (!FIELDS.includes(name)) invalid(name, `is not a field here (${FIELDS.join(', ')})`);
  }
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
  const spec = limits?.[index]?.limit ?? 0;
  return { index, slot: { scope: `${type}#${index}`, key, limit: spec }, concurrency: concurrency as number };
}
