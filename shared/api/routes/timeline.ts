import { actorOf, scopeRefusal } from '../access';
import { json, type Route } from '../http';
import type { JobTypeOf } from '../job-type-of';
import type { TimelineService } from '../timeline-service';

/**
 * `GET /jobs/{id}/timeline` (read, the job's type): the job's attempts and its journal's entries
 * (steps, sleeps, waits, invokes), 100 entries a page (`?cursor=`); invokes of children of types
 * the caller may not read are left out. Writes nothing.
 */
export function timelineRoutes(timeline: TimelineService, typeOf: JobTypeOf): Route[] {
  return [
    {
      path: '/jobs/{id}/timeline',
      access: { GET: { action: 'read', types: (_request, params) => typeOf(params.id ?? '') } },
      methods: {
        GET: async (request, params, call) => {
          const page = await timeline.read(params.id ?? '', call.scope, request.query.cursor);
          // the check read the type before this read: the job must still be of a granted type
          const refusal = scopeRefusal(
            { by: actorOf(call.principal), scope: call.scope },
            { action: 'read', types: [page.type] },
          );
          if (refusal) throw refusal;
          return json(200, page);
        },
      },
    },
  ];
}
