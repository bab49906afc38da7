import { actorOf } from '../access';
import { MAX_BATCH_REQUEST_BYTES } from '../batch-service';
import type { EventsService } from '../events-service';
import { eventRequestTypes } from '../events-service';
import { json, jsonBody, type Route } from '../http';

/**
 * `POST /events`: one event (`{ name, id?, data }`, 200 with its jobs) or a batch
 * (`{ events: [...] }`, up to 100: 200 with `{ events: [...] }`). Access: `enqueue` on every type
 * that subscribes to an event named in the body. `GET /events/{id}`: the jobs the event made, of
 * the types the caller may read.
 */
export function eventRoutes(events: EventsService): Route[] {
  return [
    {
      path: '/events',
      access: { POST: { action: 'enqueue', types: (request) => eventRequestTypes(events.catalog, jsonBody(request)) } },
      methods: {
        POST: async (request, _params, call) => {
          const out = await events.send(jsonBody(request), actorOf(call.principal));
          return json(200, out.batch ? { events: out.events } : out.events[0]);
        },
      },
      maxBody: {
        bytes: MAX_BATCH_REQUEST_BYTES,
        why: "a batch of up to 100 events may be 5 MiB, within the Function URL's 6 MB request limit",
      },
    },
    {
      path: '/events/{id}',
      access: { GET: { action: 'read' } },
      methods: {
        GET: async (_request, params, call) => json(200, await events.get(params.id ?? '', call.scope)),
      },
    },
  ];
}
