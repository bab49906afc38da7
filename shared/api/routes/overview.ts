import { parseOrThrow } from '../../core/validation';
import type { ControlPlane } from '../control-plane';
import { json, type Route } from '../http';
import { OVERVIEW_WINDOW_MINUTES, overviewQuerySchema } from '../schemas';

/** `GET /overview?windowMinutes=`: per deployed type, counts, a series, the DLQ depth and the oldest queued age. */
export function overviewRoutes(plane: Pick<ControlPlane, 'overview'>): Route[] {
  return [
    {
      path: '/overview',
      methods: {
        GET: async (request) => {
          const query = parseOrThrow(overviewQuerySchema, request.query, { message: 'invalid overview query' });
          const minutes =
            query.windowMinutes !== undefined ? Number(query.windowMinutes) : OVERVIEW_WINDOW_MINUTES.default;
          return json(200, await plane.overview.overview(minutes));
        },
      },
    },
  ];
}
