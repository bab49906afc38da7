/**
 * Events in the system chaos run. Some plain jobs of the first plain type are not enqueued: an
 * event (`POST /events`) that the type and {@link EVENT_TYPE} subscribe to makes them, one job per
 * subscriber, each with the id derived from the event (`eventJobId`). So one event is two planned
 * jobs, and both run as any job does, under every other invariant (a duplicate message, a kill).
 *
 * Invariant 20, each event accepted with 2xx makes exactly one job per subscriber:
 * - every answer to it (a send the client retried after a lost answer is answered again) names
 *   exactly the subscribers' jobs;
 * - `GET /events/{id}` at the end lists exactly those jobs;
 * - each of them is stored.
 */
import { defineEvent, eventJobId, subscribe } from '../../shared/core/events';
import { fnv1a } from '../../shared/core/table';
import { probePayload } from '../support/probes';
import { type PlannedJob, plainAndDueNow } from './system-plan';

/** The event the plain types subscribe to; its data is a probe payload, the jobs' payload. */
export const SYSTEM_EVENT = defineEvent('sys.probe', probePayload);
/** A plain probe type whose jobs only events make: the event's second subscriber. */
export const EVENT_TYPE = 'sys-ev';
/** The subscription of the first plain type and of {@link EVENT_TYPE}. */
export const SYSTEM_EVENT_SUBSCRIPTION = subscribe(SYSTEM_EVENT);

/** One planned event: its id, and the job it makes for each subscribed type. */
export interface PlannedEvent {
  name: string;
  id: string;
  /** The derived job ids, one per subscriber. */
  jobs: string[];
}

/**
 * Turns a share of the first plain type's jobs into events: a job due now, that succeeds, and that
 * no cancel, burst, line or flow shapes, chosen from its id (not a draw: the rest of a seed's plan
 * stays the same). Its id becomes the event's job id, and a job of every other subscribed type
 * joins the plan beside it. The jobs take the type's retry policy (an event names none).
 */
export function planEvents(
  jobs: PlannedJob[],
  options: { types: readonly string[]; share: number; maxAttempts: number; backoffDelayMs: number },
): PlannedEvent[] {
  const [first, ...others] = options.types;
  if (first === undefined || options.share <= 0) return [];
  const events: PlannedEvent[] = [];
  const added: PlannedJob[] = [];
  for (const job of jobs) {
    const eligible = plainAndDueNow(job, first) && (job.payload.killOnAttempts?.length ?? 0) <= 1;
    if (!eligible || (fnv1a(`event:${job.id}`) % 1000) / 1000 >= options.share) continue;
    const id = `e-${job.id}`;
    const asEvent = (type: string, source: PlannedJob): PlannedJob => ({
      ...source,
      id: eventJobId(SYSTEM_EVENT.name, id, type),
      type,
      via: 'event',
      event: { name: SYSTEM_EVENT.name, id },
      maxAttempts: options.maxAttempts,
      backoff: { kind: 'constant', delayMs: options.backoffDelayMs },
      backoffKind: 'short',
    });
    const made = asEvent(first, job);
    Object.assign(job, made);
    const siblings = others.map((type) =>
      asEvent(type, { ...job, payload: { ...job.payload }, duplicates: [], dlqCopyAfterMs: undefined }),
    );
    added.push(...siblings);
    events.push({ name: SYSTEM_EVENT.name, id, jobs: [job.id, ...siblings.map((s) => s.id)] });
  }
  jobs.push(...added);
  return events;
}

/** What the run saw of the events, for invariant 20. */
export interface EventsInput {
  planned: readonly PlannedEvent[];
  /** Every 2xx answer to a send of the event, by event id: the job ids it named. */
  answers: ReadonlyMap<string, readonly (readonly string[])[]>;
  /** `GET /events/{id}` at the end, by event id: the job ids listed under the event's name, or why the read failed. */
  listed: ReadonlyMap<string, readonly string[] | { error: string }>;
  /** The jobs stored at the end. */
  stored: ReadonlySet<string>;
}

/** Invariant 20 on what the run saw: one violation per event and thing wrong with it. */
export function checkEvents(input: EventsInput): {
  checked: number;
  violations: { subject: string; detail: string }[];
} {
  let checked = 0;
  const violations: { subject: string; detail: string }[] = [];
  const same = (a: readonly string[], b: readonly string[]) =>
    a.length === b.length && [...a].sort().join(' ') === [...b].sort().join(' ');
  for (const event of input.planned) {
    const answers = input.answers.get(event.id) ?? [];
    if (answers.length === 0) continue; // never accepted: it may have made its jobs or not
    checked += 1;
    const subject = event.jobs[0] ?? event.id;
    const want = event.jobs.join(', ');
    for (const named of answers) {
      if (!same(named, event.jobs)) {
        violations.push({
          subject,
          detail: `event ${event.id} was answered with jobs [${named.join(', ')}], not one per subscriber [${want}]`,
        });
      }
    }
    const listed = input.listed.get(event.id);
    if (listed === undefined || !Array.isArray(listed)) {
      const why = listed === undefined ? 'not read' : (listed as { error: string }).error;
      violations.push({ subject, detail: `GET /events/${event.id} at the end failed: ${why}` });
    } else if (!same(listed, event.jobs)) {
      violations.push({
        subject,
        detail: `GET /events/${event.id} at the end lists [${listed.join(', ')}], not one per subscriber [${want}]`,
      });
    }
    const missing = event.jobs.filter((id) => !input.stored.has(id));
    if (missing.length > 0) {
      violations.push({
        subject,
        detail: `event ${event.id} was accepted but its jobs ${missing.join(', ')} are not stored`,
      });
    }
  }
  return { checked, violations };
}
