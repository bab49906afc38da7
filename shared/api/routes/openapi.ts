import { json, type Route } from '../http';
import { openApiDocument } from '../openapi';

/** `GET /openapi.json`: the OpenAPI 3.1 document, generated from the request and response schemas. */
export function openApiRoutes(): Route[] {
  return [
    { path: '/openapi.json', access: { GET: 'public' }, methods: { GET: async () => json(200, openApiDocument()) } },
  ];
}
