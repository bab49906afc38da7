import { actorOf, scopeRefusal } from '../access';
import { json, type Route } from '../http';
import type { InvokedService } from '../invoked-service';
import type { JobTypeOf } from '../job-type-of';

/**
 * `GET /jobs/{id}/invoked` (read, the job's type): the jobs the job started with `ctx.invoke`,
 * 100 a page (`?cursor=`), each with its state; the children of types the caller may not read
 * are left out.
 */
export function invokedRoutes(invoked: InvokedService, typeOf: JobTypeOf): Route[] {
  return [
    {
      path: '/jobs/{id}/invoked',
      access: { GET: { action: 'read', types: (_request, params) => typeOf(params.id ?? '') } },
      methods: {
        GET: async (request, params, call) => {
          const { type, page } = await invoked.list(params.id ?? '', call.scope, request.query.cursor);
          // the check read the type before this read: the job must still be of a granted type
          const refusal = scopeRefusal(
            { by: actorOf(call.principal), scope: call.scope },
            { action: 'read', types: [type] },
          );
          if (refusal) throw refusal;
          return json(200, page);
        },
      },
    },
  ];
}
