import { createHash } from 'node:crypto';
import { canonicalJson } from './job';

/**
 * A job's identity for replays: SHA-256 of its type and payload as canonical JSON (keys sorted),
 * so the same payload written with its keys in another order hashes the same. An enqueue, a
 * signal and a schedule compare a replay by it.
 *
 * @example
 * payloadHash('send-email', { to: 'a@b.c' }) === payloadHash('send-email', { to: 'a@b.c' }); // true
 */
export function payloadHash(type: string, payload: unknown): string {
  return createHash('sha256').update(canonicalJson({ type, payload })).digest('hex');
}
