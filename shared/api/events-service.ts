/**
 * `POST /events` and `GET /events/{id}`: an event sent once makes one job for each job type that
 * subscribes to it (shared/core/events.ts, docs/events.md). The request is checked whole before
 * anything is written (each event's name and data, each job's payload and options): any 400
 * writes nothing. Then each job is written as an enqueue writes it, under the id derived from the
 * event's id and its type, and their messages are sent together (a job of a ranked line may
 * take its place or join its line instead, as at any enqueue). An event is accepted (2xx) only
 * once every one of its jobs is written and handed on; a request cut short answers 5xx, and
 * sending it again with the same ids finds the jobs written and makes the rest.
 */
import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import type { TypeScope } from '../core/access';
import type { Clock } from '../core/clock';
import { type EventWaiter, type EventWaits, isMatchValue, matchKey, valueAt } from '../core/event-waits';
import {
  EVENT_ID_PATTERN,
  EVENT_NAME_PATTERN,
  type EventCatalog,
  type EventInput,
  type EventJob,
  eventCatalog,
  eventJobId,
  MAX_EVENTS_PER_REQUEST,
  planEvent,
  type Subscriber,
} from '../core/events';
import type { JobView } from '../core/job';
import { MAX_SIGNAL_BYTES } from '../core/journal';
import { jsonBytes } from '../core/limits';
import type { JobState } from '../core/states';
import { parseOrThrow } from '../core/validation';
import {
  ConfigError,
  type FieldIssue,
  NotFoundError,
  OrreryError,
  PayloadTooLargeError,
  ValidationError,
} from '../errors';
import { mapWithConcurrency } from './concurrency';
import type { JobsService, PendingSend } from './jobs-service';
import { jobStateSchema } from './schemas';

/** Job writes of one request in flight at once. */
const EVENT_CONCURRENCY = 10;

export const eventSchema = z
  .object({
    name: z
      .string()
      .regex(EVENT_NAME_PATTERN, 'must be 1-128 characters of A-Z a-z 0-9 . _ : - starting with a letter or digit'),
    /** The event's id: sending it again with this id makes nothing new. @default a random UUID */
    id: z
      .string()
      .regex(EVENT_ID_PATTERN, 'must be 1-64 characters of A-Z a-z 0-9 _ . - starting with a letter or digit')
      .optional(),
    data: z.record(z.string(), z.unknown(), 'must be a JSON object'),
  })
  .strict();

export const eventBatchSchema = z
  .object({
    events: z
      .array(eventSchema)
      .min(1, `must hold 1 to ${MAX_EVENTS_PER_REQUEST} events`)
      .max(MAX_EVENTS_PER_REQUEST, `must hold 1 to ${MAX_EVENTS_PER_REQUEST} events`),
  })
  .strict();

/** `POST /events`'s body, as documented: one event, or a batch. */
export const eventsRequestDocSchema = z.union([eventSchema, eventBatchSchema]);

const eventJobViewSchema = z.object({
  type: z.string(),
  id: z.string().meta({ description: 'Derived from the event id and the type' }),
  status: z.enum(['created', 'existing']).meta({ description: '`existing`: made by an earlier send of the event' }),
  state: jobStateSchema,
});

/** An event's answer: its id and name, and the job each subscribed type got (none where a filter turned it down). */
export const eventViewSchema = z.object({ id: z.string(), name: z.string(), jobs: z.array(eventJobViewSchema) });
export const eventBatchViewSchema = z.object({ events: z.array(eventViewSchema) });
export const eventJobsSchema = z.object({
  id: z.string(),
  jobs: z.array(
    z.object({ name: z.string(), type: z.string(), id: z.string(), state: jobStateSchema, createdAt: z.string() }),
  ),
});

/** A job an event made (or found made by an earlier send of it). */
export interface EventJobView {
  type: string;
  id: string;
  /** `created` by this request, or `existing`: made by an earlier send of the event. */
  status: 'created' | 'existing';
  state: JobState;
}

export interface EventView {
  id: string;
  name: string;
  /** One per subscribed type whose filter took the event; empty when every filter turned it down. */
  jobs: EventJobView[];
}

/** A job of `GET /events/{id}`. */
export interface EventJobState {
  /** The event that made it (two events sent under one id are two events). */
  name: string;
  type: string;
  id: string;
  state: JobState;
  createdAt: string;
}

/** Whether a `POST /events` body is a batch (`{ events: [...] }`) rather than one event: the access check and the service read it alike. */
const isBatch = (body: unknown): body is { events?: unknown } =>
  typeof body === 'object' && body !== null && 'events' in body;

/** The types an event request may make jobs of or wake, read loosely for the access check (`enqueue` on each). */
export function eventRequestTypes(catalog: EventCatalog, body: unknown): string[] {
  if (typeof body !== 'object' || body === null) return [];
  const list = isBatch(body) ? body.events : [body];
  if (!Array.isArray(list)) return [];
  const types = new Set<string>();
  for (const item of list) {
    const name = typeof item === 'object' && item !== null ? (item as { name?: unknown }).name : undefined;
    if (typeof name !== 'string') continue;
    for (const s of catalog.get(name)?.subscribers ?? []) types.add(s.type);
    // an event only waited for wakes jobs of the types that wait for it
    for (const type of catalog.get(name)?.waiters ?? []) types.add(type);
  }
  return [...types];
}

/** What delivers events to the jobs that wait for them (`ctx.waitForEvent`); see {@link EventsService}. */
export interface EventWaitDeps {
  index: EventWaits;
  /** Delivers an event to one waiter through its wait's reserved signal (SignalsService.deliverEvent). */
  deliver(waiter: EventWaiter, event: { id: string; name: string; data: unknown; at: string }): Promise<unknown>;
  clock: Clock;
  /** How long a sent event is kept for a wait that registers later: the jobs' retention. */
  retentionDays: number;
}

export class EventsService {
  readonly catalog: EventCatalog;
  /** Every event name and each type that subscribes to it: the jobs `GET /events/{id}` looks for. */
  private readonly pairs: { name: string; type: string }[];

  constructor(private readonly deps: { jobs: JobsService; specs: readonly Subscriber[]; waits?: EventWaitDeps }) {
    this.catalog = eventCatalog(deps.specs);
    this.pairs = [...this.catalog.entries()].flatMap(([name, e]) => e.subscribers.map((s) => ({ name, type: s.type })));
  }

  /**
   * Sends one event (`{ name, id?, data }`) or a batch (`{ events: [...] }`, up to 100). Returns
   * each event's jobs, in the order sent; `batch` says which form the body had.
   */
  async send(body: unknown, by?: string): Promise<{ batch: boolean; events: EventView[] }> {
    const batch = isBatch(body);
    const sent = batch
      ? parseOrThrow(eventBatchSchema, body, { message: 'invalid events' }).events
      : [parseOrThrow(eventSchema, body, { message: 'invalid event' })];
    const events: EventInput[] = sent.map((e) => ({ name: e.name, id: e.id ?? randomUUID(), data: e.data }));
    const planned = this.plan(events, batch);
    const jobs = planned.flatMap((p) => p.jobs);
    const outcomes = await mapWithConcurrency(jobs, EVENT_CONCURRENCY, (job) =>
      this.deps.jobs
        .write(
          { type: job.type, id: job.id, payload: job.payload as Record<string, unknown> },
          { fromEvent: true, ...(by ? { by } : {}) },
        )
        .then(
          (w) => ({ ok: true as const, ...w }),
          (error: unknown) => ({ ok: false as const, error }),
        ),
    );
    // the jobs written are sent even when another failed: each is stored and owed its message
    const sends = outcomes.flatMap((o) => (o.ok && o.send ? [o.send] : [])) as PendingSend[];
    const failures = await this.deps.jobs.sendPending(sends);
    // a job not written (a conflict, a dependency), or written and not sent: the event is not
    // accepted; the same request again finds what was written and makes the rest. A failure to
    // try again answers ahead of a conflict: a 409 says "do not send it again", and a job the
    // failure left unwritten would never be made
    const errors = [...outcomes.flatMap((o) => (o.ok ? [] : [o.error])), ...failures.filter((f) => f !== undefined)];
    const failed = errors.find((e) => !(e instanceof OrreryError && e.status === 409)) ?? errors[0];
    if (failed) throw failed;
    await this.announce(events);
    const views = new Map(jobs.map((job, i) => [job.id, outcomes[i] as { created: boolean; job: JobView }]));
    return {
      batch,
      events: planned.map(({ event, jobs: made }) => ({
        id: event.id,
        name: event.name,
        jobs: made.map((job) => {
          const w = views.get(job.id) as { created: boolean; job: JobView };
          return { type: job.type, id: job.id, status: w.created ? 'created' : 'existing', state: w.job.state };
        }),
      })),
    };
  }

  /**
   * Hands each event whose definition declares `matchOn` to the jobs that wait for it: per path
   * whose value can be matched, it records the event under the match key (1 write unit per KB),
   * then reads the waiters there (one strongly consistent Query) and delivers the event to each
   * (SignalsService.deliverEvent: 4 write units per waiter reached). Recording first, and the
   * waiter registering before it looks, is what keeps an event sent before the wait (and after
   * the job was created) from being lost (docs/workflows.md). An event without `matchOn` costs
   * nothing here. A failure answers 5xx: the same request again delivers once.
   */
  private async announce(events: readonly EventInput[]): Promise<void> {
    const waits = this.deps.waits;
    if (!waits) return;
    const keys = events.flatMap((event) =>
      (this.catalog.get(event.name)?.definition.matchOn ?? []).flatMap((path) => {
        const value = valueAt(event.data, path);
        return isMatchValue(value) ? [{ event, key: matchKey(event.name, path, value) }] : [];
      }),
    );
    if (keys.length === 0) return;
    const now = waits.clock.now();
    const at = new Date(now).toISOString();
    const expiresAt = Math.floor(now / 1000) + waits.retentionDays * 86_400;
    await mapWithConcurrency(keys, EVENT_CONCURRENCY, async ({ event, key }) => {
      // an event sent again keeps its first send's time: a job made since does not get it
      const sent = await waits.index.recordSent(
        key,
        { id: event.id, name: event.name, data: event.data, at },
        expiresAt,
      );
      for (const waiter of await waits.index.waiters(key, Math.floor(now / 1000))) {
        await waits.deliver(waiter, sent);
      }
    });
  }

  /** Every event's jobs, each checked as its enqueue would check it: any refusal is a 400 for the whole request. */
  private plan(events: readonly EventInput[], batch: boolean): { event: EventInput; jobs: EventJob[] }[] {
    const seen = new Map<string, number>();
    const deployed = new Set(this.deps.jobs.deployedTypes());
    return events.map((event, i) => {
      const path = batch ? `events.${i}` : '';
      const at = (field: string) => (path ? `${path}.${field}` : field);
      // one event is its name and its id: two names under one id are two events
      const key = `${event.name}\n${event.id}`;
      const first = seen.get(key);
      if (first !== undefined) {
        throw new ValidationError(
          `event ${event.name} ${event.id} appears twice in the request`,
          [{ path: at('id'), message: `the id of events.${first} too` }],
          'duplicate_event',
        );
      }
      seen.set(key, i);
      const jobs = planEvent(this.catalog, event, path);
      if (this.catalog.get(event.name)?.definition.matchOn && this.deps.waits) {
        // delivered to a wait as a signal's payload: within a signal's limit
        const size = jsonBytes(event.data);
        if (size > MAX_SIGNAL_BYTES) {
          throw new PayloadTooLargeError(
            `${at('data')}: the ${event.name} event is matched by waits, whose events are at most ${MAX_SIGNAL_BYTES} bytes of JSON (this one: ${size})`,
            MAX_SIGNAL_BYTES,
          );
        }
      }
      for (const job of jobs) {
        if (!deployed.has(job.type)) {
          // the API's catalog names a type this deployment has not: a fault of the deployment, not of the event
          throw new ConfigError(
            `job type ${job.type} subscribes to ${event.name} in the API's catalog but is not deployed; ` +
              'deploy it (addJobType) or remove it from the catalog',
          );
        }
        try {
          this.deps.jobs.validate({ type: job.type, id: job.id, payload: job.payload as Record<string, unknown> }, '', {
            fromEvent: true,
          });
        } catch (error) {
          if (error instanceof PayloadTooLargeError) {
            const limit = error.details?.limitBytes;
            throw new PayloadTooLargeError(
              `${at('data')}: the ${job.type} job this event makes: ${error.message}`,
              typeof limit === 'number' ? limit : 0,
            );
          }
          if (!(error instanceof ValidationError)) throw error;
          throw new ValidationError(
            `the ${job.type} job this event makes is refused: ${error.message}`,
            (error.issues ?? []).map((issue) => dataIssue(issue, job, at('data'))),
            error.code,
          );
        }
      }
      return { event, jobs };
    });
  }

  /**
   * The jobs the event `id` made, of the types in `scope`: one read per event name and type that
   * subscribes to it (the job ids are derived; the event itself is not stored). 404 when none is found.
   */
  async get(id: string, scope: TypeScope): Promise<{ id: string; jobs: EventJobState[] }> {
    if (!EVENT_ID_PATTERN.test(id)) throw new NotFoundError(`event ${id} not found`, 'event_not_found');
    const pairs = this.pairs.filter(
      ({ type }) => scope.kind === 'all' || (scope.kind === 'some' && scope.types.has(type)),
    );
    const found = await Promise.all(
      pairs.map(async ({ name, type }) => {
        try {
          const job = await this.deps.jobs.get(eventJobId(name, id, type));
          return [{ name, type, id: job.id, state: job.state, createdAt: job.createdAt }];
        } catch (error) {
          if (error instanceof OrreryError && error.status === 404) return [];
          throw error;
        }
      }),
    );
    const jobs = found.flat();
    if (jobs.length === 0) throw new NotFoundError(`event ${id} not found (no job it made exists)`, 'event_not_found');
    return { id, jobs };
  }
}

/**
 * An issue of the job an event makes, named on the event: a field of its payload is the same
 * field of the data when the payload is the data; else the data as a whole, the field in the message.
 */
function dataIssue(issue: FieldIssue, job: EventJob, data: string): FieldIssue {
  const path = (issue.path ?? '').replace(/^\./, '');
  if (job.asData && (path === 'payload' || path.startsWith('payload.'))) {
    const field = path.slice('payload'.length + 1);
    return { path: field ? `${data}.${field}` : data, message: issue.message };
  }
  return { path: data, message: `the ${job.type} job's ${path || 'request'}: ${issue.message}` };
}
