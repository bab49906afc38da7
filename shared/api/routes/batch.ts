import { parseOrThrow } from '../../core/validation';
import { actorOf } from '../access';
import { MAX_BATCH_REQUEST_BYTES } from '../batch-service';
import type { ControlPlane } from '../control-plane';
import { bodyTypes, type HttpRequest, json, jsonBody, type Route, type RouteHandler } from '../http';
import { batchRequestSchema, MAX_BATCH_JOBS } from '../schemas';

/**
 * `POST /jobs/batch` (also `POST /jobs:batch`): up to 100 jobs, each validated and deduplicated
 * on its own. Always 200 with one result per job, in order; 400 only when the body is not
 * `{ "jobs": [...] }` with 1 to 100 items.
 */
export function batchRoutes(plane: Pick<ControlPlane, 'batch'>): Route[] {
  const post: RouteHandler = async (request, _params, call) => {
    const body = parseOrThrow(batchRequestSchema, jsonBody(request), { message: 'invalid batch request' });
    return json(200, await plane.batch.enqueueAll(body.jobs, request.requestId, actorOf(call.principal)));
  };
  const maxBody = {
    bytes: MAX_BATCH_REQUEST_BYTES,
    why: `a batch of up to ${MAX_BATCH_JOBS} jobs may be 5 MiB, within the Function URL's 6 MB request limit`,
  };
  // every type in the batch must be granted: one type not granted refuses the whole batch
  const access = { POST: { action: 'enqueue' as const, types: (request: HttpRequest) => bodyTypes(request, 'jobs') } };
  return [
    { path: '/jobs/batch', methods: { POST: post }, access, maxBody },
    { path: '/jobs:batch', methods: { POST: post }, access, maxBody },
  ];
}
