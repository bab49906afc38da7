import { actorOf } from '../access';
import type { ControlPlane } from '../control-plane';
import { json, type Route } from '../http';
import type { JobTypeOf } from '../job-type-of';

/**
 * `POST /jobs/{id}/cancel`, `POST /jobs/{id}/retry`: 200 with the job, 409 `illegal_state`
 * otherwise. Access: control (cancel, retry) on the job's type.
 */
export function jobControlRoutes(plane: Pick<ControlPlane, 'control'>, typeOf: JobTypeOf): Route[] {
  const types = (_request: unknown, params: Record<string, string>) => typeOf(params.id ?? '');
  return [
    {
      path: '/jobs/{id}/cancel',
      access: { POST: { action: 'control', control: ['cancel'], types, audit: 'cancel' } },
      methods: {
        POST: async (_request, params, call) =>
          json(200, await plane.control.cancel(params.id ?? '', { by: actorOf(call.principal), scope: call.scope })),
      },
    },
    {
      path: '/jobs/{id}/retry',
      access: { POST: { action: 'control', control: ['retry'], types, audit: 'retry' } },
      methods: {
        POST: async (_request, params, call) =>
          json(200, await plane.control.retry(params.id ?? '', { by: actorOf(call.principal), scope: call.scope })),
      },
    },
  ];
}
