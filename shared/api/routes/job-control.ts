import type { ControlPlane } from '../control-plane';
import { json, type Route } from '../http';

/** `POST /jobs/{id}/cancel`, `POST /jobs/{id}/retry`: 200 with the job, 409 `illegal_state` otherwise. */
export function jobControlRoutes(plane: Pick<ControlPlane, 'control'>): Route[] {
  return [
    {
      path: '/jobs/{id}/cancel',
      methods: { POST: async (_request, params) => json(200, await plane.control.cancel(params.id ?? '')) },
    },
    {
      path: '/jobs/{id}/retry',
      methods: { POST: async (_request, params) => json(200, await plane.control.retry(params.id ?? '')) },
    },
  ];
}
