import { JOB_ID_PATTERN } from '../../core/enqueue';
import { NotFoundError } from '../../errors';
import { actorOf, scopeRefusal } from '../access';
import type { FlowsService } from '../flows-service';
import { bodyTypes, json, jsonBody, type Route } from '../http';

/**
 * `POST /flows` (a DAG of jobs, all checked before any is written; enqueue, every type of its
 * jobs) and `GET /flows/{id}` (read, every type of its jobs: a caller scoped by type reads the flow
 * once more for the check).
 */
export function flowsRoutes(flows: FlowsService): Route[] {
  return [
    {
      path: '/flows',
      access: { POST: { action: 'enqueue', types: (request) => bodyTypes(request, 'jobs') } },
      methods: {
        POST: async (request, _params, call) => {
          const { created, flow } = await flows.create(jsonBody(request), actorOf(call.principal));
          return json(created ? 201 : 200, flow, created ? { location: `/flows/${encodeURIComponent(flow.id)}` } : {});
        },
      },
    },
    {
      path: '/flows/{id}',
      access: {
        GET: {
          action: 'read',
          types: async (_request, params) => {
            const id = params.id ?? '';
            if (!JOB_ID_PATTERN.test(id)) return [];
            return [...new Set((await flows.get(id)).nodes.map((node) => node.type))];
          },
        },
      },
      methods: {
        GET: async (_request, params, call) => {
          const id = params.id ?? '';
          if (!JOB_ID_PATTERN.test(id))
            throw new NotFoundError(`flow ${JSON.stringify(id)} not found`, 'flow_not_found');
          const flow = await flows.get(id);
          // the check read the flow's types first: every job shown must still be of a granted type
          const refusal = scopeRefusal(
            { by: actorOf(call.principal), scope: call.scope },
            { action: 'read', types: [...new Set(flow.nodes.map((node) => node.type))] },
          );
          if (refusal) throw refusal;
          return json(200, flow);
        },
      },
    },
  ];
}
