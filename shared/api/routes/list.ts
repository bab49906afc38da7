import { JOB_TYPE_PATTERN } from '../../core/job-type';
import { splitPayloadConditions } from '../../core/payload-filter';
import { parseOrThrow } from '../../core/validation';
import { NotFoundError } from '../../errors';
import type { ControlPlane } from '../control-plane';
import { json, type Route } from '../http';
import { listQuerySchema } from '../schemas';

/**
 * `GET /jobs?type=&state=&createdAfter=&createdBefore=&limit=&cursor=&payload.<path>=`,
 * `GET /types/{type}/latest`.
 */
export function listRoutes(plane: Pick<ControlPlane, 'list'>): Route[] {
  return [
    {
      path: '/jobs',
      // a caller granted read on some types only must name one of them (`type=`)
      access: { GET: { action: 'read', types: (request) => (request.query.type ? [request.query.type] : 'all') } },
      methods: {
        GET: async (request) => {
          const { conditions, rest } = splitPayloadConditions(request.query);
          const query = parseOrThrow(listQuerySchema, rest, { message: 'invalid list query' });
          return json(200, await plane.list.list(query, conditions));
        },
      },
    },
    {
      path: '/types/{type}/latest',
      access: { GET: { action: 'read', types: (_request, params) => [params.type ?? ''] } },
      methods: {
        GET: async (_request, params) => {
          const type = params.type ?? '';
          if (!JOB_TYPE_PATTERN.test(type)) {
            throw new NotFoundError(`job type ${JSON.stringify(type)} is not deployed`, 'type_not_found');
          }
          return json(200, await plane.list.latest(type));
        },
      },
    },
  ];
}
