/**
 * `ctx.emit` in a worker: the events service of the API (its checks, its fan-out, its delivery to
 * waits), run in the worker's own process on the worker's ports. No second fan-out, and no call
 * to the API: the handler's role writes the jobs as the API would (infra/constructs/job-worker.ts
 * grants it the job items and the ready queues), with no access check (the handler is code the
 * deployment trusts; its role could write these jobs anyway).
 */

import type { EventWaits } from '../core/event-waits';
import type { EventSender } from '../core/events';
import type { Journal } from '../core/journal';
import { EventsService } from './events-service';
import { JobsService, type JobsServiceDeps } from './jobs-service';
import { SignalsService } from './signals-service';

/**
 * An {@link EventSender} over the given ports: the API's `EventsService`, whose jobs are
 * enqueued `by` the sender (a job's `enqueuedBy`), and whose waits get the event through the
 * API's `SignalsService`.
 */
export function createEventSender(
  deps: JobsServiceDeps & { journal: Journal; eventWaits: EventWaits },
  by: string,
): EventSender {
  const jobs = new JobsService(deps);
  const signals = new SignalsService(deps);
  const events = new EventsService({
    jobs,
    specs: deps.catalog,
    waits: {
      index: deps.eventWaits,
      deliver: (waiter, event) => signals.deliverEvent(waiter, event),
      clock: deps.clock,
      retentionDays: deps.config.retentionDays,
    },
  });
  return {
    async send(event) {
      await events.send(event, by);
    },
  };
}
