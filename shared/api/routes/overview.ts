import { parseOrThrow } from '../../core/validation';
import type { ControlPlane } from '../control-plane';
import { json, type Route } from '../http';
import { OVERVIEW_WINDOW_MINUTES, overviewQuerySchema } from '../schemas';

/** `GET /overview?windowMinutes=`: per deployed type, counts, a series, the DLQ depth and the oldest queued age. */
export function overviewRoutes(plane: Pick<ControlPlane, 'overview'>): Route[] {
  return [
    {
      path: '/overview',
      // a caller granted read on some types sees only those types
      access: { GET: { action: 'read' } },
      methods: {
        GET: async (request, _params, call) => {
          const query = parseOrThrow(overviewQuerySchema, request.query, { message: 'invalid overview query' });
          const minutes =
            query.windowMinutes !== undefined ? Number(query.windowMinutes) : OVERVIEW_WINDOW_MINUTES.default;
          const overview = await plane.overview.overview(minutes);
          const scope = call.scope;
          if (scope.kind === 'some') overview.types = overview.types.filter((t) => scope.types.has(t.type));
          return json(200, overview);
        },
      },
    },
  ];
}
