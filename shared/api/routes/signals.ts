import { MAX_INLINE_BODY_BYTES } from '../../core/blobs';
import { actorOf } from '../access';
import { json, jsonBody, type Route } from '../http';
import type { JobTypeOf } from '../job-type-of';
import type { SignalsService } from '../signals-service';

/** `POST /jobs/{id}/signals/{name}`: 202 when stored, 200 for a replay of the same signal. Access: signal, the job's type. */
export function signalRoutes(signals: SignalsService, typeOf: JobTypeOf): Route[] {
  return [
    {
      path: '/jobs/{id}/signals/{name}',
      access: { POST: { action: 'signal', types: (_request, params) => typeOf(params.id ?? '') } },
      // over 64 KiB, a signal's payload is kept in the payload bucket (when the deployment has one)
      maxBody: { bytes: MAX_INLINE_BODY_BYTES, why: "the Function URL's 6 MB request limit" },
      methods: {
        POST: async (request, params, call) => {
          const { created, receipt } = await signals.send(
            params.id ?? '',
            params.name ?? '',
            request.bodyText === undefined ? {} : jsonBody(request),
            { by: actorOf(call.principal), scope: call.scope },
          );
          return json(created ? 202 : 200, receipt);
        },
      },
    },
  ];
}
