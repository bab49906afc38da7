import { parseOrThrow } from '../../core/validation';
import type { ControlPlane } from '../control-plane';
import { json, jsonBody, type Route } from '../http';
import { dlqQuerySchema, redriveRequestSchema } from '../schemas';

/** `GET /dlq?type=` (peek, not consume), `POST /dlq/redrive` `{ type }` (move back to the ready queue). */
export function dlqRoutes(plane: Pick<ControlPlane, 'dlq'>): Route[] {
  return [
    {
      path: '/dlq',
      methods: {
        GET: async (request) => {
          const query = parseOrThrow(dlqQuerySchema, request.query, { message: 'invalid DLQ query' });
          return json(200, await plane.dlq.peek(query.type, query.limit !== undefined ? Number(query.limit) : 10));
        },
      },
    },
    {
      path: '/dlq/redrive',
      methods: {
        POST: async (request) => {
          const body = parseOrThrow(redriveRequestSchema, jsonBody(request), { message: 'invalid redrive request' });
          const result = await plane.dlq.redrive(body.type, body.maxMessages);
          return json(result.method === 'move-task' ? 202 : 200, result);
        },
      },
    },
  ];
}
