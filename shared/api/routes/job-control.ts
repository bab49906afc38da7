import { actorOf } from '../access';
import type { ControlPlane } from '../control-plane';
import { json, jsonBody, type Route } from '../http';
import type { JobTypeOf } from '../job-type-of';

/**
 * `POST /jobs/{id}/cancel`, `POST /jobs/{id}/retry`, `POST /jobs/{id}/rerun`: 200 with the job,
 * 409 `illegal_state` otherwise (a rerun: 400 for an unknown `fromStep` or a bad payload). Access:
 * control (cancel, retry, rerun) on the job's type.
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
    {
      path: '/jobs/{id}/rerun',
      access: { POST: { action: 'control', control: ['rerun'], types, audit: 'rerun' } },
      methods: {
        POST: async (request, params, call) =>
          json(
            200,
            await plane.control.rerun(params.id ?? '', request.bodyText === undefined ? {} : jsonBody(request), {
              by: actorOf(call.principal),
              scope: call.scope,
            }),
          ),
      },
    },
  ];
}
