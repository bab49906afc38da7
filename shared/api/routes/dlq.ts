import { JOB_TYPE_PATTERN } from '../../core/job-type';
import { parseOrThrow } from '../../core/validation';
import { actorOf } from '../access';
import type { ControlPlane } from '../control-plane';
import { json, jsonBody, type Route } from '../http';
import { dlqQuerySchema, redriveRequestSchema } from '../schemas';

/**
 * `GET /dlq?type=` (peek, not consume, and the type's last redrive; read on that type),
 * `POST /dlq/redrive` `{ type }` (move back to the ready queue, recorded as the type's last
 * redrive with its caller; operate).
 */
export function dlqRoutes(plane: Pick<ControlPlane, 'dlq'>): Route[] {
  return [
    {
      path: '/dlq',
      access: {
        GET: {
          action: 'read',
          types: (request) => (JOB_TYPE_PATTERN.test(request.query.type ?? '') ? [request.query.type as string] : []),
        },
      },
      methods: {
        GET: async (request) => {
          const query = parseOrThrow(dlqQuerySchema, request.query, { message: 'invalid DLQ query' });
          return json(200, await plane.dlq.peek(query.type, query.limit !== undefined ? Number(query.limit) : 10));
        },
      },
    },
    {
      path: '/dlq/redrive',
      access: { POST: { action: 'operate', audit: 'dlq.redrive' } },
      methods: {
        POST: async (request, _params, call) => {
          const body = parseOrThrow(redriveRequestSchema, jsonBody(request), { message: 'invalid redrive request' });
          const result = await plane.dlq.redrive(body.type, {
            ...(body.maxMessages !== undefined ? { maxMessages: body.maxMessages } : {}),
            by: actorOf(call.principal),
          });
          return json(result.method === 'move-task' ? 202 : 200, result);
        },
      },
    },
  ];
}
