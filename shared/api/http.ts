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

export function fromFunctionUrlEvent(event: APIGatewayProxyEventV2): HttpRequest {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.headers ?? {})) {
    if (value !== undefined) headers[name.toLowerCase()] = value;
  }
  let bodyText: string | undefined;
  if (event.body !== undefined && event.body !== null && event.body !== '') {
    const bytes = event.isBase64Encoded ? Buffer.from(event.body, 'base64') : Buffer.from(event.body, 'utf8');
    if (bytes.length > MAX_REQUEST_BYTES) {
      throw new PayloadTooLargeError(
        `request body is ${bytes.length} bytes; the limit is ${MAX_REQUEST_BYTES} bytes`,
        MAX_REQUEST_BYTES,
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
  for (const candidate of routes) {
    const params = matchPath(candidate.path, request.path);
    if (!params) continue;
    const handler = candidate.methods[request.method];
    if (!handler) throw new MethodNotAllowedError(request.method, candidate.path, Object.keys(candidate.methods));
    return { handler, params };
  }
  throw new NotFoundError(`no route for ${request.method} ${request.path}`, 'route_not_found');
}
