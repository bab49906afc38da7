import type { ControlAction } from '../../core/access';
import { parseOrThrow } from '../../core/validation';
import { actorOf } from '../access';
import { BULK_CONCURRENCY } from '../bulk-service';
import { mapWithConcurrency } from '../concurrency';
import type { ControlPlane } from '../control-plane';
import { type HttpRequest, json, jsonBody, type Route } from '../http';
import type { JobTypeOf } from '../job-type-of';
import { bulkRequestSchema } from '../schemas';

/**
 * `POST /jobs/bulk` `{ action: retry | cancel, ids: [1..100 unique ids] }`: each id as
 * `POST /jobs/{id}/retry|cancel`; 200 with one result per id, in order. 400 (nothing done) when
 * the body is not that.
 */
export function bulkRoutes(plane: Pick<ControlPlane, 'bulk'>, typeOf: JobTypeOf): Route[] {
  const ids = (request: HttpRequest): string[] => {
    const body = jsonBody(request) as { ids?: unknown } | null;
    return Array.isArray(body?.ids) ? body.ids.filter((id): id is string => typeof id === 'string').slice(0, 100) : [];
  };
  return [
    {
      path: '/jobs/bulk',
      access: {
        // control (bulk) and the action it applies, on the type of every job it names: a caller
        // scoped by type has each job read first (one GetItem per id, 8 at a time); one job of a
        // type not granted (or unknown) refuses the whole request before any job is changed
        POST: {
          action: 'control',
          audit: 'bulk',
          control: (request): readonly ControlAction[] => {
            const action = (jsonBody(request) as { action?: unknown } | null)?.action;
            return action === 'cancel' || action === 'retry' ? ['bulk', action] : ['bulk'];
          },
          types: async (request) => {
            const found = await mapWithConcurrency(ids(request), BULK_CONCURRENCY, (id) => typeOf(id));
            return [...new Set(found.flat())];
          },
        },
      },
      methods: {
        POST: async (request, _params, call) => {
          const body = parseOrThrow(bulkRequestSchema, jsonBody(request), { message: 'invalid bulk request' });
          return json(200, await plane.bulk.apply(body, { by: actorOf(call.principal), scope: call.scope }));
        },
      },
    },
  ];
}
