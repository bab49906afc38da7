import { json, jsonBody, type Route } from '../http';
import type { SignalsService } from '../signals-service';

/** `POST /jobs/{id}/signals/{name}`: 202 when stored, 200 for a replay of the same signal. */
export function signalRoutes(signals: SignalsService): Route[] {
  return [
    {
      path: '/jobs/{id}/signals/{name}',
      methods: {
        POST: async (request, params) => {
          const { created, receipt } = await signals.send(
            params.id ?? '',
            params.name ?? '',
            request.bodyText === undefined ? {} : jsonBody(request),
          );
          return json(created ? 202 : 200, receipt);
        },
      },
    },
  ];
}
