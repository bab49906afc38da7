import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { PlatformConfig } from '../config';
import { type Clock, systemClock } from '../core/clock';
import { enqueueRequestSchema, JOB_ID_PATTERN } from '../core/enqueue';
import type { JobTypeSpec } from '../core/job-type';
import type { JobQueue, JobScheduler, JobStore } from '../core/ports';
import { parseOrThrow } from '../core/validation';
import { NotFoundError } from '../errors';
import { createLogger, errorFields, type Logger } from '../logger';
import { errorResponse, fromFunctionUrlEvent, type HttpResponse, json, jsonBody, type Route, route } from './http';
import { JobsService } from './jobs-service';

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

  const routes: Route[] = [
    {
      path: '/jobs',
      methods: {
        POST: async (request) => {
          const body = parseOrThrow(enqueueRequestSchema, jsonBody(request), { message: 'invalid enqueue request' });
          const { created, job } = await jobs.enqueue(body);
          return json(created ? 201 : 200, job, created ? { location: `/jobs/${encodeURIComponent(job.id)}` } : {});
        },
      },
    },
    {
      path: '/jobs/{id}',
      methods: {
        GET: async (_request, params) => {
          const id = params.id ?? '';
          if (!JOB_ID_PATTERN.test(id)) throw new NotFoundError(`job ${JSON.stringify(id)} not found`, 'job_not_found');
          return json(200, await jobs.get(id));
        },
      },
    },
  ];

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
