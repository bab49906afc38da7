import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { PlatformConfig } from '../config';
import type { BlobStore } from '../core/blobs';
import { type Clock, systemClock } from '../core/clock';
import type { Debouncer } from '../core/debounce';
import type { JobGraph } from '../core/dependencies';
import type { EventWaits } from '../core/event-waits';
import type { FlowSlots } from '../core/flow';
import type { JobTypeSpec } from '../core/job-type';
import type { Journal } from '../core/journal';
import { type Metrics, noMetrics } from '../core/metrics';
import type { Pacer } from '../core/pace';
import type { JobQueue, JobScheduler, JobStore } from '../core/ports';
import { createLogger, errorFields, type Logger } from '../logger';
import { type ApiAccess, auditOperatorAction, createAccessGate, denyEveryone, principalOf } from './access';
import { type ControlPlaneAdapters, createControlPlane } from './control-plane';
import { EventsService } from './events-service';
import { FlowsService } from './flows-service';
import { bodyLimitFor, errorResponse, fromFunctionUrlEvent, type HttpResponse, type Route, route } from './http';
import { InvokedService } from './invoked-service';
import { jobTypeOf } from './job-type-of';
import { JobsService } from './jobs-service';
import { batchRoutes } from './routes/batch';
import { bulkRoutes } from './routes/bulk';
import { dlqRoutes } from './routes/dlq';
import { eventRoutes } from './routes/events';
import { flowRoutes } from './routes/flow';
import { flowsRoutes } from './routes/flows';
import { invokedRoutes } from './routes/invoked';
import { jobControlRoutes } from './routes/job-control';
import { jobRoutes } from './routes/jobs';
import { listRoutes } from './routes/list';
import { openApiRoutes } from './routes/openapi';
import { overviewRoutes } from './routes/overview';
import { type ScheduleRouteDeps, scheduleRoutes } from './routes/schedules';
import { signalRoutes } from './routes/signals';
import { timelineRoutes } from './routes/timeline';
import { uploadRoutes } from './routes/uploads';
import { SignalsService } from './signals-service';
import { TimelineService } from './timeline-service';

export interface ApiDeps {
  config: PlatformConfig;
  /**
   * Who may call, for what: the grants document (loaded once per container, on the first call)
   * and what a call with no IAM identity gets. Every route checks its action against the caller's
   * grants before it runs; a call outside them answers 403 `forbidden` and writes nothing.
   * `allowEveryone()` (shared/api/access.ts) lets everything through, for tests and embedders.
   * @default denyEveryone(): every call answers 403 (pass the deployed grants)
   */
  access?: ApiAccess;
  /** Job types the API validates payloads against (schemas only). */
  catalog: readonly JobTypeSpec[];
  store: JobStore;
  queue: JobQueue;
  scheduler: JobScheduler;
  /** @default systemClock */
  clock?: Clock;
  logger?: Logger;
  /** Where `JobsEnqueued` goes. @default noMetrics */
  metrics?: Metrics;
  /** Recurring schedules' store and trigger. @default built from the environment on first use */
  schedules?: ScheduleRouteDeps['schedules'];
  /**
   * Concurrency slots, for `GET /types/{type}/keys/{key}` and its `/limits`, and for a new job that
   * joins its line at enqueue. Without it those routes answer 404, and every job is sent.
   */
  flow?: FlowSlots;
  /** Throttle and rate-limit state: required when a job type has a `rateLimit` (counted at enqueue). */
  pacer?: Pacer;
  /** Debounce windows: required when a job type has a `debounce`. */
  debouncer?: Debouncer;
  /** Job dependencies (`dependsOn`, flows). @default `dependsOn` is refused */
  graph?: JobGraph;
  /** Job journals and signal inboxes, for `POST /jobs/{id}/signals/{name}`. Without it that route answers 404. */
  journal?: Journal;
  /**
   * The match index of event waits: with it (and `journal`), `POST /events` delivers an event
   * whose definition declares `matchOn` to the jobs that wait for it. @default no wait is reached
   */
  eventWaits?: EventWaits;
  /** GSI reader, control writes and DLQ access (listing, cancel/retry, DLQ routes). Required for those routes. */
  controlPlane?: ControlPlaneAdapters;
  /**
   * The payload bucket (shared/core/blobs.ts): with it, payloads over 256 KiB are kept there,
   * `POST /uploads` is served and enqueues take `payloadRef`. @default none: those are refused
   */
  blobs?: BlobStore;
}

export type ApiHandler = (event: APIGatewayProxyEventV2) => Promise<HttpResponse>;

/**
 * The enqueue API as a Function URL (payload format 2.0) handler.
 *
 * Routes: see `OPERATIONS` in `openapi.ts` (served as `GET /openapi.json`). Errors use one shape:
 * `{ "error": { "code", "message", "issues"? } }`.
 */
export function createApiHandler(deps: ApiDeps): ApiHandler {
  const log = deps.logger ?? createLogger({ level: deps.config.logLevel });
  const gate = createAccessGate({
    access: deps.access ?? denyEveryone(),
    log,
    metrics: deps.metrics ?? noMetrics,
  });
  const typeOf = jobTypeOf(deps.store);
  const jobs = new JobsService({ ...deps, clock: deps.clock ?? systemClock, log });

  // One module of routes per area; each gets the services it needs.
  const routes: Route[] = [...jobRoutes(jobs, typeOf)];
  routes.push(...scheduleRoutes({ ...deps, logger: log, jobs }));
  const plane = createControlPlane({ ...deps, clock: deps.clock ?? systemClock, log }, jobs);
  routes.push(...batchRoutes(plane));
  routes.push(...bulkRoutes(plane, typeOf));
  routes.push(...overviewRoutes(plane));
  routes.push(...listRoutes(plane));
  routes.push(...jobControlRoutes(plane, typeOf));
  routes.push(...dlqRoutes(plane));
  routes.push(...flowRoutes({ ...deps, clock: deps.clock ?? systemClock, log }));
  routes.push(
    ...flowsRoutes(
      new FlowsService({
        jobs,
        ...(deps.graph ? { graph: deps.graph } : {}),
        clock: deps.clock ?? systemClock,
        log,
        retentionDays: deps.config.retentionDays,
      }),
    ),
  );
  const signals = deps.journal
    ? new SignalsService({ ...deps, journal: deps.journal, clock: deps.clock ?? systemClock, log })
    : undefined;
  routes.push(
    ...eventRoutes(
      new EventsService({
        jobs,
        specs: deps.catalog,
        ...(signals && deps.eventWaits
          ? {
              waits: {
                index: deps.eventWaits,
                deliver: (waiter, event) => signals.deliverEvent(waiter, event),
                clock: deps.clock ?? systemClock,
                retentionDays: deps.config.retentionDays,
              },
            }
          : {}),
      }),
    ),
  );
  if (signals) routes.push(...signalRoutes(signals, typeOf));
  if (deps.journal) {
    const invoked = new InvokedService({ store: deps.store, journal: deps.journal, clock: deps.clock ?? systemClock });
    routes.push(...invokedRoutes(invoked, typeOf));
    const timeline = new TimelineService({
      store: deps.store,
      journal: deps.journal,
      clock: deps.clock ?? systemClock,
    });
    routes.push(...timelineRoutes(timeline, typeOf));
  }
  routes.push(...uploadRoutes(deps.blobs));
  routes.push(...openApiRoutes());

  return async (event) => {
    const requestId = event.requestContext?.requestId ?? 'unknown';
    try {
      const request = fromFunctionUrlEvent(event, bodyLimitFor(routes, event));
      const { handler, params, access } = route(routes, request);
      const call = await gate.check({ principal: principalOf(event), access, request, params });
      const response = await handler(request, params, call);
      if (typeof access === 'object' && access.audit && (response.statusCode ?? 200) < 300) {
        auditOperatorAction(
          { log, metrics: deps.metrics ?? noMetrics },
          {
            action: access.audit,
            principal: call.principal,
            params,
            bodies: [typeof response.body === 'string' ? response.body : undefined, request.bodyText],
            at: (deps.clock ?? systemClock).now(),
          },
        );
      }
      return { ...response, headers: { ...response.headers, 'x-request-id': requestId } };
    } catch (error) {
      const { response, internal } = errorResponse(error, requestId);
      if (internal) log.error('request failed', { requestId, status: response.statusCode, ...errorFields(error) });
      return response;
    }
  };
}
