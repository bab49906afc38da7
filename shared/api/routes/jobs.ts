import { MAX_INLINE_BODY_BYTES } from '../../core/blobs';
import { enqueueRequestSchema, JOB_ID_PATTERN } from '../../core/enqueue';
import { parseOrThrow } from '../../core/validation';
import { NotFoundError } from '../../errors';
import { actorOf, scopeRefusal } from '../access';
import { bodyTypes, json, jsonBody, type Route } from '../http';
import type { JobTypeOf } from '../job-type-of';
import type { JobsService } from '../jobs-service';

/** `POST /jobs` (enqueue, its type), `GET /jobs/{id}` (read, the job's type). */
export function jobRoutes(jobs: JobsService, typeOf: JobTypeOf): Route[] {
  return [
    {
      path: '/jobs',
      access: { POST: { action: 'enqueue', types: (request) => bodyTypes(request, 'self') } },
      // a payload up to what a Function URL takes; over 256 KiB it is kept in the payload bucket
      maxBody: {
        bytes: MAX_INLINE_BODY_BYTES,
        why: "the Function URL's 6 MB request limit; larger payloads go through POST /uploads",
      },
      methods: {
        POST: async (request, _params, call) => {
          const raw = await jobs.withUploadedPayload(jsonBody(request));
          const body = parseOrThrow(enqueueRequestSchema, raw, { message: 'invalid enqueue request' });
          const { created, job } = await jobs.enqueue(body, { by: actorOf(call.principal) });
          return json(created ? 201 : 200, job, created ? { location: `/jobs/${encodeURIComponent(job.id)}` } : {});
        },
      },
    },
    {
      path: '/jobs/{id}',
      access: { GET: { action: 'read', types: (_request, params) => typeOf(params.id ?? '') } },
      methods: {
        GET: async (_request, params, call) => {
          const id = params.id ?? '';
          if (!JOB_ID_PATTERN.test(id)) throw new NotFoundError(`job ${JSON.stringify(id)} not found`, 'job_not_found');
          const job = await jobs.get(id);
          // the check read the type before this read: the job shown must still be of a granted type
          const refusal = scopeRefusal(
            { by: actorOf(call.principal), scope: call.scope },
            { action: 'read', types: [job.type] },
          );
          if (refusal) throw refusal;
          return json(200, job);
        },
      },
    },
  ];
}
