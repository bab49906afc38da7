import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { PlatformConfig } from '../config';
import { type Clock, systemClock } from '../core/clock';
import type { JobTypeSpec } from '../core/job-type';
import type { JobQueue, JobScheduler, JobStore } from '../core/ports';
import { createLogger, errorFields, type Logger } from '../logger';
import { errorResponse, fromFunctionUrlEvent, type HttpResponse, type Route, route } from './http';
import { JobsService } from './jobs-service';
import { jobRoutes } from './routes/jobs';

export interface ApiDeps {
  config: PlatformConfig;
  /** Job types the API validates payloads against (schemas only). */
  catalog: readonly JobTypeSpec[];
  store: JobStore;
  queue: JobQueue;
  scheduler: JobScheduler;
  /** @default systemClock */
  clock?: Clock;
  logger?: Logger;
}

export type ApiHandler = (event: APIGatewayProxyEventV2) => Promise<HttpResponse>;

/**
 * The enqueue API as a Function URL (payload format 2.0) handler.
 *
 * Routes: `POST /jobs`, `GET /jobs/{id}`. Errors use one shape:
 * `{ "error": { "code", "message", "issues"? } }`.
 */
export function createApiHandler(deps: ApiDeps): ApiHandler {
  const log = deps.logger ?? createLogger({ level: deps.config.logLevel });
  const jobs = new JobsService({ ...deps, clock: deps.clock ?? systemClock, log });

  // One module of routes per area; each gets the services it needs.
  const routes: Route[] = [...jobRoutes(jobs)];

  return async (event) => {
    const requestId = event.requestContext?.requestId ?? 'unknown';
    try {
      const request = fromFunctionUrlEvent(event);
      const { handler, params } = route(routes, request);
      const response = await handler(request, params);
      return { ...response, headers: { ...response.headers, 'x-request-id': requestId } };
    } catch (error) {
      const { response, internal } = errorResponse(error, requestId);
      if (internal) log.error('request failed', { requestId, status: response.statusCode, ...errorFields(error) });
      return response;
    }
  };
}
