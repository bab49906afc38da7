import { parseOrThrow } from '../../core/validation';
import type { ControlPlane } from '../control-plane';
import { json, jsonBody, type Route } from '../http';
import { bulkRequestSchema } from '../schemas';

/**
 * `POST /jobs/bulk` `{ action: retry | cancel, ids: [1..100 unique ids] }`: each id as
 * `POST /jobs/{id}/retry|cancel`; 200 with one result per id, in order. 400 (nothing done) when
 * the body is not that.
 */
export function bulkRoutes(plane: Pick<ControlPlane, 'bulk'>): Route[] {
  return [
    {
      path: '/jobs/bulk',
      methods: {
        POST: async (request) => {
          const body = parseOrThrow(bulkRequestSchema, jsonBody(request), { message: 'invalid bulk request' });
          return json(200, await plane.bulk.apply(body));
        },
      },
    },
  ];
}
