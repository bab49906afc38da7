/**
 * Events that start jobs: an event is sent once (`POST /events`), and every job type that
 * subscribes to it gets one job. Pure: the rules of an event (its name, its data's schema, the
 * job each subscription makes of it), no AWS import. See docs/events.md.
 *
 * The job an event makes for a type has an id derived from the event's id and the type
 * ({@link eventJobId}): sending the same event again finds those jobs and makes nothing new, and
 * `GET /events/{id}` finds them with no record of the event itself.
 */
import { createHash } from 'node:crypto';
import type { z } from 'zod';
import { ConfigError, type FieldIssue, ValidationError } from '../errors';
import { JOB_ID_PATTERN } from './limits';
import { toFieldIssues } from './validation';
import { safeParse } from './zod-mini';

/** An event name: 1–128 characters of letters, digits and `. _ : -`, starting with a letter or digit. */
export const EVENT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
/** An event id: as a job id, 1–64 characters of `A-Z a-z 0-9 _ . -`, starting with a letter or digit. */
export const EVENT_ID_PATTERN = JOB_ID_PATTERN;
/** Events in one `POST /events` request. */
export const MAX_EVENTS_PER_REQUEST = 100;

/** A schema of an event's data: any zod 4 schema (full `zod` or `zod/mini`), as a job's payload. */
export type EventDataSchema = z.core.$ZodType;

/** An event: its name, the schema its data must match, and the fields waits may match it on. */
export interface EventDefinition<Schema extends EventDataSchema = EventDataSchema, Name extends string = string> {
  readonly name: Name;
  readonly data: Schema;
  /**
   * Paths in the data (`orderId`, `customer.id`) that `ctx.waitForEvent` may match on: each send
   * of the event looks up the waits on each of them (1 write unit and 1 read unit per path).
   * @default none: no wait can match the event, and a send costs nothing beyond its jobs
   */
  readonly matchOn?: readonly string[];
}

/** A path of `matchOn`: dotted names of letters, digits and `_` (`orderId`, `customer.id`). */
const MATCH_PATH = /^[A-Za-z_$][A-Za-z0-9_$]*(\.[A-Za-z_$][A-Za-z0-9_$]*)*$/;

/**
 * Declares an event. Job types subscribe to it with {@link subscribe}; `POST /events` refuses
 * (400) data that does not match its schema, and writes nothing. `matchOn` names the fields a
 * handler's `ctx.waitForEvent` may match it on.
 *
 * @example
 * export const orderPlaced = defineEvent('order.placed', z.object({ orderId: z.string(), total: z.number() }));
 * export const orderPaid = defineEvent('order.paid', z.object({ orderId: z.string() }), { matchOn: ['orderId'] });
 */
export function defineEvent<Schema extends EventDataSchema, const Name extends string>(
  name: Name,
  data: Schema,
  options: { matchOn?: readonly string[] } = {},
): EventDefinition<Schema, Name> {
  if (!EVENT_NAME_PATTERN.test(name)) {
    throw new ConfigError(
      `event name "${name}" must match ${EVENT_NAME_PATTERN} (letters, digits and . _ : -, up to 128 chars)`,
    );
  }
  const matchOn = options.matchOn ?? [];
  for (const path of matchOn) {
    if (!MATCH_PATH.test(path)) {
      throw new ConfigError(`event "${name}": matchOn path "${path}" must be dotted names (orderId, customer.id)`);
    }
  }
  if (new Set(matchOn).size !== matchOn.length) throw new ConfigError(`event "${name}": matchOn names a path twice`);
  return Object.freeze({ name, data, ...(matchOn.length > 0 ? { matchOn: Object.freeze([...matchOn]) } : {}) });
}

/** What a job type does with an event it subscribes to. */
export interface Subscription {
  readonly event: EventDefinition;
  /** Only an event whose data passes makes a job. @default every event */
  readonly filter?: (data: never) => boolean;
  /** The job's payload, made from the event's data. @default the data itself */
  readonly payload?: (data: never, event: { id: string; name: string }) => unknown;
}

/**
 * A subscription of a job type to `event`, typed by the event's data.
 *
 * @example
 * defineJobType({
 *   type: 'send-receipt',
 *   payload: z.object({ orderId: z.string() }),
 *   on: [subscribe(orderPlaced, { filter: (d) => d.total > 0, payload: (d) => ({ orderId: d.orderId }) })],
 * });
 */
export function subscribe<E extends EventDefinition>(
  event: E,
  options: {
    filter?: (data: z.output<E['data']>) => boolean;
    payload?: (data: z.output<E['data']>, event: { id: string; name: string }) => unknown;
  } = {},
): Subscription {
  return Object.freeze({ event, ...options }) as Subscription;
}

/** A problem with a job type's `on`, or undefined. */
export function subscriptionsProblem(on: unknown): string | undefined {
  if (!Array.isArray(on)) return 'on must be an array of subscriptions (subscribe(event, options))';
  const seen = new Set<string>();
  for (const [i, s] of on.entries()) {
    const event = (s as Partial<Subscription> | undefined)?.event;
    if (!event || typeof event.name !== 'string' || !EVENT_NAME_PATTERN.test(event.name) || !event.data) {
      return `on[${i}] must name an event made with defineEvent`;
    }
    if (seen.has(event.name)) return `on[${i}]: the type subscribes to "${event.name}" twice`;
    seen.add(event.name);
    for (const fn of ['filter', 'payload'] as const) {
      const value = (s as Record<string, unknown>)[fn];
      if (value !== undefined && typeof value !== 'function') return `on[${i}].${fn} must be a function`;
    }
  }
  return undefined;
}

/** A problem with a job type's `waitsFor`, or undefined. */
export function waitsForProblem(waitsFor: unknown): string | undefined {
  if (!Array.isArray(waitsFor)) return 'waitsFor must be an array of events (defineEvent)';
  const seen = new Set<string>();
  for (const [i, event] of waitsFor.entries()) {
    const e = event as Partial<EventDefinition> | undefined;
    if (!e || typeof e.name !== 'string' || !EVENT_NAME_PATTERN.test(e.name) || !e.data) {
      return `waitsFor[${i}] must be an event made with defineEvent`;
    }
    if (seen.has(e.name)) return `waitsFor[${i}]: the type lists "${e.name}" twice`;
    seen.add(e.name);
  }
  return undefined;
}

/** A job type as events see it: its name, its subscriptions, and the events it waits for. */
export interface Subscriber {
  readonly type: string;
  readonly on?: readonly Subscription[];
  readonly waitsFor?: readonly EventDefinition[];
}

/** One event of a catalog: its definition, the types that subscribe to it, and those that wait for it. */
export interface CatalogEvent {
  definition: EventDefinition;
  subscribers: { type: string; subscription: Subscription }[];
  /** Types that list it in `waitsFor` (sending it may wake their jobs). */
  waiters: string[];
}

/** The events a catalog's types subscribe to, by name. */
export type EventCatalog = ReadonlyMap<string, CatalogEvent>;

/**
 * The events of `specs` (their types' `on`). Two subscriptions to one name must share its
 * definition (one `defineEvent`): two schemas under one name would validate one event two ways,
 * and two `matchOn` would record it for waits or not by which came first.
 */
export function eventCatalog(specs: readonly Subscriber[]): EventCatalog {
  const events = new Map<string, CatalogEvent>();
  const entryOf = (event: EventDefinition, type: string): CatalogEvent => {
    const known = events.get(event.name);
    // the same schema with another matchOn is another event too: waits would get it or not by
    // which definition came first
    if (known && (known.definition.data !== event.data || !sameMatchOn(known.definition, event))) {
      const first = known.subscribers[0]?.type ?? known.waiters[0];
      throw new ConfigError(
        `event "${event.name}" is defined twice (job types ${first} and ${type}): ` +
          'export one defineEvent and subscribe to it from both',
      );
    }
    const entry = known ?? { definition: event, subscribers: [], waiters: [] };
    events.set(event.name, entry);
    return entry;
  };
  for (const spec of specs) {
    for (const subscription of spec.on ?? []) {
      entryOf(subscription.event, spec.type).subscribers.push({ type: spec.type, subscription });
    }
    for (const event of spec.waitsFor ?? []) entryOf(event, spec.type).waiters.push(spec.type);
  }
  return events;
}

/** Whether two definitions name the same `matchOn` paths (in any order). */
function sameMatchOn(a: EventDefinition, b: EventDefinition): boolean {
  const [x, y] = [[...(a.matchOn ?? [])].sort(), [...(b.matchOn ?? [])].sort()];
  return x.length === y.length && x.every((path, i) => path === y[i]);
}

/** The job types subscribed to the event `name` (none for an event no type subscribes to). */
export function subscribersOf(catalog: EventCatalog, name: string): string[] {
  return (catalog.get(name)?.subscribers ?? []).map((s) => s.type);
}

/**
 * The id of the job an event makes for a type: `ev.` and 40 hex digits of SHA-256 over the event's
 * name and id and the type. Derived, so a replay finds the job; hashed, so it fits a job id (64
 * chars) whatever their lengths; with the name, so two events under one id are two events. Ids of
 * this shape are the events' own: an enqueue that names one is refused ({@link isEventJobId}).
 */
export function eventJobId(name: string, eventId: string, type: string): string {
  return `ev.${createHash('sha256').update(`${name}\n${eventId}\n${type}`).digest('hex').slice(0, 40)}`;
}

const EVENT_JOB_ID = /^ev\.[0-9a-f]{40}$/;

/** Whether `id` has the shape of an event's job id, which only `POST /events` may write. */
export function isEventJobId(id: string): boolean {
  return EVENT_JOB_ID.test(id);
}

/**
 * The id of the event a job's `ctx.emit` sends: `em.` and 40 hex digits of SHA-256 over the job's
 * id, its incarnation and the step's name. Derived, so an attempt that sent the event and died
 * before recording its step sends the same event again, which makes nothing new.
 */
export function emitEventId(jobId: string, incarnation: string, step: string): string {
  return `em.${createHash('sha256').update(`${jobId}\n${incarnation}\n${step}`).digest('hex').slice(0, 40)}`;
}

/** What sends an event for a handler (`ctx.emit`): the events service of the API, in the worker. */
export interface EventSender {
  /** Sends the event as `POST /events` does: every check, then one job per subscriber; idempotent by id. */
  send(event: EventInput): Promise<void>;
}

/** An event as sent, its id given or drawn. */
export interface EventInput {
  name: string;
  id: string;
  data: Record<string, unknown>;
}

/** A job an event makes. */
export interface EventJob {
  type: string;
  id: string;
  payload: unknown;
  /** Its payload is the event's data itself (no `payload` function): a field it refuses is a field of the data. */
  asData: boolean;
}

/**
 * The jobs `event` makes: one per type that subscribes to it and whose filter passes, with the
 * payload its subscription makes of the data. Throws a {@link ValidationError} (issues under
 * `path`) for an event no type subscribes to (`unknown_event`), data that does not match the
 * event's schema, or a filter or payload function that throws on it (`invalid_event_data`).
 * Checks no job payload: the enqueue's own checks do.
 */
export function planEvent(catalog: EventCatalog, event: EventInput, path = ''): EventJob[] {
  const at = (field: string) => (path ? `${path}.${field}` : field);
  const entry = catalog.get(event.name);
  if (!entry) {
    throw new ValidationError(
      `no job type subscribes to or waits for the event "${event.name}"`,
      [{ path: at('name'), message: 'is not an event any deployed job type subscribes to or waits for' }],
      'unknown_event',
    );
  }
  const parsed = safeParse(entry.definition.data, event.data);
  if (!parsed.success) {
    throw new ValidationError(
      `data does not match the ${event.name} event's schema`,
      toFieldIssues(parsed.error, at('data')),
      'invalid_event_data',
    );
  }
  const jobs: EventJob[] = [];
  for (const { type, subscription } of entry.subscribers) {
    // each subscriber its own copy: a function that changes its argument changes no other job's payload
    const data = structuredClone(parsed.data) as never;
    const made = mapped(type, at('data'), () => {
      if (subscription.filter && !subscription.filter(data)) return undefined;
      return { payload: subscription.payload ? subscription.payload(data, { id: event.id, name: event.name }) : data };
    });
    if (made)
      jobs.push({
        type,
        id: eventJobId(event.name, event.id, type),
        payload: made.payload,
        asData: !subscription.payload,
      });
  }
  return jobs;
}

/** Runs a subscription's function; one that throws is the event's data it could not take (400). */
function mapped<T>(type: string, path: string, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    const issue: FieldIssue = {
      path,
      message: `the ${type} subscription could not take it: ${error instanceof Error ? error.message : String(error)}`,
    };
    throw new ValidationError(`the ${type} subscription refused the event's data`, [issue], 'invalid_event_data');
  }
}
