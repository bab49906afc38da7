import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { AccessAction, ControlAction, Principal, TypeScope } from '../core/access';
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

const parsedBodies = new WeakMap<HttpRequest, unknown>();

/**
 * Parses a JSON request body; 415 for a non-JSON content type, 400 for malformed JSON. Parsed
 * once per request (the access check may read the body's types before the route does).
 */
export function jsonBody(request: HttpRequest): unknown {
  if (parsedBodies.has(request)) return parsedBodies.get(request);
  const body = parseJsonBody(request);
  parsedBodies.set(request, body);
  return body;
}

function parseJsonBody(request: HttpRequest): unknown {
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

/** Who is calling, as the access check found it; routes record it (the audit) and limit listings by it. */
export interface CallContext {
  /** The caller's IAM identity; absent for a call with none (a Function URL without `AWS_IAM`). */
  principal: Principal | undefined;
  /** The job types the route's action is granted on (a listing shows only those). */
  scope: TypeScope;
}

export type RouteHandler = (
  request: HttpRequest,
  params: Record<string, string>,
  call: CallContext,
) => Promise<HttpResponse>;

/**
 * What a route's method does, as grants name it, and how to find the job types it touches.
 * `public`: no grant needed (only the IAM invoke permission), for `GET /openapi.json`.
 */
export type RouteAccess =
  | 'public'
  | {
      action: AccessAction;
      /**
       * An operator action (cancel, DLQ redrive, schedule pause, ...): once it succeeds, the API
       * logs `operator action` with who did it and counts it (`OperatorActions`).
       * @default not an operator action
       */
      audit?: string;
      /**
       * A `control` call's sub-actions, each checked (a bulk request is `bulk` and the action it
       * applies). A function reads them from the request (its body parsed once, see {@link jsonBody}).
       */
      control?: readonly ControlAction[] | ((request: HttpRequest) => readonly ControlAction[]);
      /**
       * The job types the call touches: from the body, the query, the path, or a read of the
       * job. Called only when the caller's grant for the action is scoped by type, so a caller
       * granted every type costs no read. `'all'`: the call touches every type (a scoped caller is
       * refused). `[]` (and no function): the route limits its answer to `CallContext.scope`.
       * @default no types: the action alone decides
       */
      types?: (
        request: HttpRequest,
        params: Record<string, string>,
      ) => readonly string[] | 'all' | Promise<readonly string[] | 'all'>;
    };

export interface Route {
  /** Path template with `{name}` segments, e.g. `/jobs/{id}`. */
  path: string;
  methods: Partial<Record<string, RouteHandler>>;
  /** What each method needs to be granted; a method without an entry answers 403 to everyone. */
  access: Partial<Record<string, RouteAccess>>;
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

/**
 * The job types named in a request body, read loosely for the access check: `type` of the body
 * (`pick: 'self'`) or of each item of its `jobs` array. Entries without a string type are skipped
 * (the route's own validation refuses them, and writes nothing for them).
 */
export function bodyTypes(request: HttpRequest, pick: 'self' | 'jobs'): string[] {
  const body = jsonBody(request);
  if (typeof body !== 'object' || body === null) return [];
  const items = pick === 'self' ? [body] : (body as { jobs?: unknown }).jobs;
  if (!Array.isArray(items)) return [];
  const types: string[] = [];
  for (const item of items) {
    const type = typeof item === 'object' && item !== null ? (item as { type?: unknown }).type : undefined;
    if (typeof type === 'string' && !types.includes(type)) types.push(type);
  }
  return types;
}

/** Finds the handler for a request: 404 for an unknown path, 405 for a known path and wrong method. */
export function route(
  routes: readonly Route[],
  request: HttpRequest,
): { handler: RouteHandler; params: Record<string, string>; access: RouteAccess | undefined } {
  // Several routes may match a path (`/jobs/batch` and `/jobs/{id}`): the first with the method wins.
  let known: { path: string; allow: string[] } | undefined;
  for (const candidate of routes) {
    const params = matchPath(candidate.path, request.path);
    if (!params) continue;
    const handler = candidate.methods[request.method];
    if (handler) return { handler, params, access: candidate.access[request.method] };
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
