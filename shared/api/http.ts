import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { MAX_REQUEST_BYTES } from '../core/enqueue';
import {
  MethodNotAllowedError,
  NotFoundError,
  OrreryError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
  ValidationError,
} from '../errors';
import { jsonDepthExceeds, MAX_JSON_DEPTH } from './json-depth';

export type HttpResponse = APIGatewayProxyStructuredResultV2;

/** A parsed request, independent of how it arrived (Function URL event). */
export interface HttpRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  requestId: string;
  /** Raw body text, already base64-decoded and checked to be UTF-8. */
  bodyText: string | undefined;
}

export function fromFunctionUrlEvent(
  event: APIGatewayProxyEventV2,
  limit: { bytes: number; why?: string } = { bytes: MAX_REQUEST_BYTES },
): HttpRequest {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.headers ?? {})) {
    if (value !== undefined) headers[name.toLowerCase()] = value;
  }
  let bodyText: string | undefined;
  if (event.body !== undefined && event.body !== null && event.body !== '') {
    const bytes = event.isBase64Encoded ? Buffer.from(event.body, 'base64') : Buffer.from(event.body, 'utf8');
    if (bytes.length > limit.bytes) {
      throw new PayloadTooLargeError(
        `request body is ${bytes.length} bytes; the limit is ${limit.bytes} bytes${limit.why ? ` (${limit.why})` : ''}`,
        limit.bytes,
      );
    }
    try {
      bodyText = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      throw new ValidationError(
        'request body is not valid UTF-8',
        [{ path: '(body)', message: 'must be UTF-8 JSON' }],
        'malformed_body',
      );
    }
  }
  const query: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.queryStringParameters ?? {})) {
    if (value !== undefined) query[name] = value;
  }
  return {
    method: event.requestContext?.http?.method?.toUpperCase() ?? 'GET',
    path: event.rawPath || '/',
    query,
    headers,
    requestId: event.requestContext?.requestId ?? 'unknown',
    bodyText,
  };
}

/** Parses a JSON request body; 415 for a non-JSON content type, 400 for malformed JSON. */
export function jsonBody(request: HttpRequest): unknown {
  const contentType = request.headers['content-type'];
  const mediaType = contentType?.split(';')[0]?.trim().toLowerCase();
  if (mediaType !== 'application/json' && !(mediaType?.startsWith('application/') && mediaType.endsWith('+json'))) {
    throw new UnsupportedMediaTypeError(contentType);
  }
  if (request.bodyText === undefined) {
    throw new ValidationError(
      'request body is empty',
      [{ path: '(body)', message: 'a JSON object is required' }],
      'malformed_json',
    );
  }
  if (jsonDepthExceeds(request.bodyText, MAX_JSON_DEPTH)) {
    throw new ValidationError(
      `request body nests deeper than ${MAX_JSON_DEPTH} levels`,
      [{ path: '(body)', message: `arrays and objects may nest at most ${MAX_JSON_DEPTH} levels deep` }],
      'malformed_body',
    );
  }
  try {
    return JSON.parse(request.bodyText);
  } catch (error) {
    throw new ValidationError(
      'request body is not valid JSON',
      [{ path: '(body)', message: error instanceof Error ? error.message : 'invalid JSON' }],
      'malformed_json',
    );
  }
}

export function json(status: number, body: unknown, headers: Record<string, string> = {}): HttpResponse {
  return {
    statusCode: status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
    body: JSON.stringify(body),
  };
}

/** Maps any error to the one error shape; never leaks a stack for 5xx. */
export function errorResponse(error: unknown, requestId: string): { response: HttpResponse; internal: boolean } {
  const headers = { 'x-request-id': requestId };
  if (error instanceof OrreryError && error.status < 500) {
    const extra: Record<string, string> = { ...headers };
    if (error instanceof MethodNotAllowedError) extra.allow = error.allow.join(', ');
    if (error.retryable) extra['retry-after'] = '1';
    return { response: json(error.status, error.toJSON(), extra), internal: false };
  }
  if (error instanceof OrreryError && error.retryable) {
    // The detail (which may name internal hosts) goes to the log, not to the caller.
    const message = 'a dependency of the API failed; retry the request with the same job id';
    const body = { error: { code: error.code, message, requestId } };
    return { response: json(error.status, body, { ...headers, 'retry-after': '1' }), internal: true };
  }
  const body = {
    error: { code: 'internal_error', message: 'internal error; see the logs for this request id', requestId },
  };
  return { response: json(500, body, headers), internal: true };
}

export type RouteHandler = (request: HttpRequest, params: Record<string, string>) => Promise<HttpResponse>;

export interface Route {
  /** Path template with `{name}` segments, e.g. `/jobs/{id}`. */
  path: string;
  methods: Partial<Record<string, RouteHandler>>;
  /** Largest body this route reads, and why (in the 413 message). @default MAX_REQUEST_BYTES */
  maxBody?: { bytes: number; why: string };
}

function matchPath(template: string, path: string): Record<string, string> | undefined {
  const want = template.split('/').filter(Boolean);
  const got = path.split('/').filter(Boolean);
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i] as string;
    const g = got[i] as string;
    if (w.startsWith('{') && w.endsWith('}')) {
      try {
        params[w.slice(1, -1)] = decodeURIComponent(g);
      } catch {
        return undefined;
      }
    } else if (w !== g) return undefined;
  }
  return params;
}

/** Finds the handler for a request: 404 for an unknown path, 405 for a known path and wrong method. */
export function route(
  routes: readonly Route[],
  request: HttpRequest,
): { handler: RouteHandler; params: Record<string, string> } {
  // Several routes may match a path (`/jobs/batch` and `/jobs/{id}`): the first with the method wins.
  let known: { path: string; allow: string[] } | undefined;
  for (const candidate of routes) {
    const params = matchPath(candidate.path, request.path);
    if (!params) continue;
    const handler = candidate.methods[request.method];
    if (handler) return { handler, params };
    known ??= { path: candidate.path, allow: [] };
    for (const method of Object.keys(candidate.methods)) if (!known.allow.includes(method)) known.allow.push(method);
  }
  if (known) throw new MethodNotAllowedError(request.method, known.path, known.allow);
  throw new NotFoundError(`no route for ${request.method} ${request.path}`, 'route_not_found');
}

/** The body limit of the route a Function URL event goes to (checked before the body is decoded). */
export function bodyLimitFor(routes: readonly Route[], event: APIGatewayProxyEventV2): { bytes: number; why?: string } {
  const method = event.requestContext?.http?.method?.toUpperCase() ?? 'GET';
  const path = event.rawPath || '/';
  const found = routes.find((r) => r.methods[method] && matchPath(r.path, path));
  return found?.maxBody ?? { bytes: MAX_REQUEST_BYTES };
}
