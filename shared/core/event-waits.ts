/**
 * `ctx.waitForEvent`: a job waits for an event whose data matches it on one field, and the event
 * finds its waiters by an index, not a scan. Pure rules and the port; see docs/workflows.md
 * ("Events: ctx.emit and ctx.waitForEvent") for why it is exact.
 *
 * A match is a **key**: the event's name, a path in its data the event's definition declares
 * (`matchOn`), and the value at that path. Both sides write under the key's partition
 * (`evmatch#<hash>`), then read the other side's items there, strongly consistent:
 * - the waiter registers itself (`wait#…`), then looks for an event sent under the key since its
 *   job was created (`sent#…`);
 * - the event records itself (`sent#…`), then reads the waiters (`wait#…`) and delivers itself to
 *   each through the job's signal inbox (a reserved signal name per wait).
 *
 * Whichever writes second sees the other's item, so an event sent after the job was created is
 * never missed; both may see each other, and the journal's first write of the wait's outcome
 * makes that harmless (the wait returns one event, once).
 */
import { createHash } from 'node:crypto';
import { ValidationError } from '../errors';
import type { ItemKey } from './table';

/** The prefix of the reserved signal a wait for an event is delivered through: `event:<step>`. */
export const EVENT_SIGNAL_PREFIX = 'event:';

/** The reserved signal name of the wait `step`. */
export function eventSignalName(step: string): string {
  return `${EVENT_SIGNAL_PREFIX}${step}`;
}

/** Whether a signal name is one of the reserved names event waits are delivered through. */
export function isEventSignal(name: string): boolean {
  return name.startsWith(EVENT_SIGNAL_PREFIX);
}

/** A value an event may be matched on: a string, a finite number or a boolean. */
export type MatchValue = string | number | boolean;

/** Whether `value` can be matched on (objects, arrays and null cannot). */
export function isMatchValue(value: unknown): value is MatchValue {
  return (
    typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))
  );
}

/** The value at a dotted path of `data` (`customer.id`), or undefined. */
export function valueAt(data: unknown, path: string): unknown {
  let at: unknown = data;
  for (const part of path.split('.')) {
    if (typeof at !== 'object' || at === null || Array.isArray(at)) return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
}

/**
 * The key of a match: 40 hex digits of SHA-256 over the event name, the path and the value's
 * JSON (so `"1"` and `1` are two keys). Hashed, so any value fits a partition key.
 */
export function matchKey(name: string, path: string, value: MatchValue): string {
  return createHash('sha256')
    .update(`${name}\n${path}\n${JSON.stringify(value)}`)
    .digest('hex')
    .slice(0, 40);
}

/** The partition of a match key: `evmatch#<key>`. */
export function matchPartition(key: string): string {
  return `evmatch#${key}`;
}

/** A waiter's item key: `wait#<job id>#<incarnation>#<signal>`. */
export function waiterKey(key: string, w: Pick<EventWaiter, 'jobId' | 'incarnation' | 'signal'>): ItemKey {
  return { pk: matchPartition(key), sk: `wait#${w.jobId}#${w.incarnation}#${w.signal}` };
}

/**
 * A sent event's item key: `sent#<event id>`. By its id, not its time: an event sent again (a
 * client's retry, an emit whose attempt died before its step was recorded) finds its first
 * record, and keeps the time of its first send.
 */
export function sentKey(key: string, e: Pick<SentEvent, 'id'>): ItemKey {
  return { pk: matchPartition(key), sk: `sent#${e.id}` };
}

/** The first of `events` sent at or after `since`: the earliest, by id within one moment. */
export function firstSentSince(events: readonly SentEvent[], since: string): SentEvent | undefined {
  return events
    .filter((e) => e.at >= since)
    .sort((a, b) => (a.at === b.at ? (a.id < b.id ? -1 : 1) : a.at < b.at ? -1 : 1))[0];
}

/**
 * `{ 'data.orderId': 'o1' }` as a path of the data (`orderId`) and its value. Exactly one field:
 * a wait matches on one key (the index is one partition per key).
 */
export function parseMatch(match: unknown): { path: string; value: MatchValue } {
  const entries = typeof match === 'object' && match !== null ? Object.entries(match) : [];
  const [entry] = entries;
  if (entries.length !== 1 || !entry) {
    throw new ValidationError('match must name exactly one field: { "data.<path>": value }', [
      { path: 'match', message: 'must have exactly one entry' },
    ]);
  }
  const [field, value] = entry;
  if (!field.startsWith('data.') || field.length === 'data.'.length) {
    throw new ValidationError(`match field "${field}" must be a path in the event's data: "data.<path>"`, [
      { path: 'match', message: 'must start with "data."' },
    ]);
  }
  if (!isMatchValue(value)) {
    throw new ValidationError(`match value of "${field}" must be a string, a finite number or a boolean`, [
      { path: `match.${field}`, message: 'must be a string, a finite number or a boolean' },
    ]);
  }
  return { path: field.slice('data.'.length), value };
}

/** A job waiting for an event under a match key. */
export interface EventWaiter {
  jobId: string;
  /** The incarnation of the job id that waits: a later job of the same id is not this waiter. */
  incarnation: string;
  /** The reserved signal its wait takes the event through ({@link eventSignalName}). */
  signal: string;
}

/** An event as the matching keeps it: what a waiter gets back. */
export interface SentEvent {
  id: string;
  name: string;
  data: unknown;
  /** When it was sent (ISO 8601). */
  at: string;
}

/** Persistence of the waits and the sent events, by match key. */
export interface EventWaits {
  /**
   * Registers the waiter under `key` (a put: registering again changes nothing that matters).
   * 1 write unit. `expiresAt` (epoch seconds): when the item may go (the wait's deadline).
   */
  register(key: string, waiter: EventWaiter, expiresAt: number): Promise<void>;
  /**
   * The first event sent under `key` at or after `since` (ISO 8601), strongly consistent, or
   * undefined. One Query of the key's sent events (1 read unit per 4 KB: a key is one value of
   * a field, an order id say, with few events).
   */
  firstSince(key: string, since: string): Promise<SentEvent | undefined>;
  /**
   * Records an event under `key`, once per event id: the first record wins, and is returned (an
   * event sent again keeps its first send's time). 1 write unit per KB of the event; an event
   * recorded already costs the refused write (1).
   */
  recordSent(key: string, event: SentEvent, expiresAt: number): Promise<SentEvent>;
  /** Every waiter registered under `key` and not expired, strongly consistent. One Query per 1 MB. */
  waiters(key: string, nowSeconds: number): Promise<EventWaiter[]>;
}
