import { createHash, randomBytes } from 'node:crypto';
import { ValidationError } from '../errors';

/**
 * The job id of a "run now" of a recurring schedule (`POST /schedules/{name}/run`), pure.
 *
 * `<name>.now.<16 hex>`: the hex is the first 64 bits of SHA-256 of the schedule name and the
 * caller's idempotency key, so a retried request with the same key names the same job (and
 * the enqueue's conditional put answers it instead of creating a second); without a key it is
 * random. A name longer than 43 characters keeps its first 43 (the hash covers the whole name).
 * It never equals a fire's run id (`<name>.<yyyymmddThhmmssZ>`).
 */
export const RUN_NOW_MARK = 'now';
/** Longest Idempotency-Key accepted. */
export const MAX_IDEMPOTENCY_KEY_CHARS = 255;
const MAX_ID = 64;
const HASH_CHARS = 16;
/** Printable ASCII, no control characters. */
const KEY_PATTERN = /^[\x20-\x7e]+$/;

/**
 * @example
 * runNowId('nightly-report', 'retry-me-1'); // 'nightly-report.now.<16 hex>', the same every time
 * runNowId('nightly-report');               // 'nightly-report.now.<16 random hex>'
 */
export function runNowId(name: string, idempotencyKey?: string): string {
  const hex =
    idempotencyKey === undefined
      ? randomBytes(HASH_CHARS / 2).toString('hex')
      : createHash('sha256').update(`${name}\n${idempotencyKey}`, 'utf8').digest('hex').slice(0, HASH_CHARS);
  const keep = MAX_ID - RUN_NOW_MARK.length - HASH_CHARS - 2;
  return `${name.slice(0, keep)}.${RUN_NOW_MARK}.${hex}`;
}

/** The `Idempotency-Key` header, checked: 1–255 printable ASCII characters; 400 naming the header otherwise. */
export function idempotencyKeyOf(headers: Record<string, string>): string | undefined {
  const key = headers['idempotency-key'];
  if (key === undefined) return undefined;
  if (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_CHARS || !KEY_PATTERN.test(key)) {
    throw new ValidationError('invalid Idempotency-Key header', [
      {
        path: 'headers.idempotency-key',
        message: `must be 1 to ${MAX_IDEMPOTENCY_KEY_CHARS} printable ASCII characters`,
      },
    ]);
  }
  return key;
}
