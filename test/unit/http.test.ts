import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import {
  errorResponse,
  fromFunctionUrlEvent,
  type HttpRequest,
  jsonBody,
  type Route,
  route,
} from '../../shared/api/http';
import { translateAwsError } from '../../shared/aws/errors';
import { MAX_REQUEST_BYTES } from '../../shared/core/enqueue';
import {
  ConfigError,
  ConflictError,
  DependencyError,
  MethodNotAllowedError,
  NotFoundError,
  OrreryError,
  PayloadTooLargeError,
  ThrottledError,
  ValidationError,
} from '../../shared/errors';

function event(overrides: Partial<APIGatewayProxyEventV2> = {}, method = 'POST'): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: '/jobs',
    rawQueryString: '',
    headers: { 'Content-Type': 'application/json' },
    requestContext: {
      accountId: '123456789012',
      apiId: 'abc',
      domainName: 'abc.lambda-url.eu-west-1.on.aws',
      domainPrefix: 'abc',
      http: { method, path: '/jobs', protocol: 'HTTP/1.1', sourceIp: '203.0.113.1', userAgent: 'test' },
      requestId: 'req-123',
      routeKey: '$default',
      stage: '$default',
      time: '01/Mar/2026:12:00:00 +0000',
      timeEpoch: 1_772_366_400_000,
    },
    isBase64Encoded: false,
    ...overrides,
  };
}

function request(overrides: Partial<HttpRequest> = {}): HttpRequest {
  return {
    method: 'POST',
    path: '/jobs',
    query: {},
    headers: { 'content-type': 'application/json' },
    requestId: 'req-1',
    bodyText: '{"a":1}',
    ...overrides,
  };
}

function thrown(fn: () => unknown): OrreryError {
  try {
    fn();
  } catch (error) {
    if (error instanceof OrreryError) return error;
    throw error;
  }
  throw new Error('expected an OrreryError, nothing was thrown');
}

describe('fromFunctionUrlEvent', () => {
  it('normalises method, path, headers, query and request id', () => {
    const req = fromFunctionUrlEvent(
      event(
        {
          rawPath: '/jobs/a',
          headers: { 'X-Trace': 't', Accept: 'application/json' },
          queryStringParameters: { q: '1' },
        },
        'get',
      ),
    );
    expect(req).toEqual({
      method: 'GET',
      path: '/jobs/a',
      query: { q: '1' },
      headers: { 'x-trace': 't', accept: 'application/json' },
      requestId: 'req-123',
      bodyText: undefined,
    });
  });

  it('decodes a base64 body', () => {
    const body = Buffer.from('{"type":"echo","payload":{"é":1}}', 'utf8').toString('base64');
    expect(fromFunctionUrlEvent(event({ body, isBase64Encoded: true })).bodyText).toBe(
      '{"type":"echo","payload":{"é":1}}',
    );
  });

  it('keeps a plain body as is and treats an empty body as absent', () => {
    expect(fromFunctionUrlEvent(event({ body: '{"a":1}' })).bodyText).toBe('{"a":1}');
    expect(fromFunctionUrlEvent(event({ body: '' })).bodyText).toBeUndefined();
  });

  it('rejects a body that is not UTF-8 with 400 malformed_body', () => {
    const body = Buffer.from([0x7b, 0xff, 0xfe, 0x7d]).toString('base64');
    const error = thrown(() => fromFunctionUrlEvent(event({ body, isBase64Encoded: true })));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.status).toBe(400);
    expect(error.code).toBe('malformed_body');
    expect(error.issues).toEqual([{ path: '(body)', message: 'must be UTF-8 JSON' }]);
  });

  it('accepts a body of exactly the limit and rejects one byte more with 413', () => {
    expect(fromFunctionUrlEvent(event({ body: 'a'.repeat(MAX_REQUEST_BYTES) })).bodyText).toHaveLength(
      MAX_REQUEST_BYTES,
    );
    const error = thrown(() => fromFunctionUrlEvent(event({ body: 'a'.repeat(MAX_REQUEST_BYTES + 1) })));
    expect(error).toBeInstanceOf(PayloadTooLargeError);
    expect(error.status).toBe(413);
    expect(error.toJSON().error.limitBytes).toBe(MAX_REQUEST_BYTES);
  });

  it('counts bytes, not characters, against the limit', () => {
    const body = 'é'.repeat(MAX_REQUEST_BYTES / 2 + 1);
    expect(thrown(() => fromFunctionUrlEvent(event({ body }))).status).toBe(413);
  });

  it('counts decoded bytes of a base64 body against the limit', () => {
    const body = Buffer.alloc(MAX_REQUEST_BYTES + 1, 0x61).toString('base64');
    expect(thrown(() => fromFunctionUrlEvent(event({ body, isBase64Encoded: true }))).status).toBe(413);
  });
});

describe('jsonBody', () => {
  it.each(['application/json', 'application/json; charset=utf-8', 'Application/JSON', 'application/problem+json'])(
    'parses a body sent as %s',
    (contentType) => {
      expect(jsonBody(request({ headers: { 'content-type': contentType } }))).toEqual({ a: 1 });
    },
  );

  it.each(['text/plain', 'application/x-www-form-urlencoded', 'application/jsonp', 'text/json'])(
    'rejects %s with 415',
    (contentType) => {
      const error = thrown(() => jsonBody(request({ headers: { 'content-type': contentType } })));
      expect(error.status).toBe(415);
      expect(error.code).toBe('unsupported_media_type');
      expect(error.message).toBe(`Content-Type must be application/json (got ${contentType})`);
    },
  );

  it('rejects a missing content type with 415', () => {
    const error = thrown(() => jsonBody(request({ headers: {} })));
    expect(error.status).toBe(415);
    expect(error.message).toBe('Content-Type must be application/json');
  });

  it('rejects malformed JSON with 400 malformed_json', () => {
    const error = thrown(() => jsonBody(request({ bodyText: '{"a":' })));
    expect(error.status).toBe(400);
    expect(error.code).toBe('malformed_json');
    expect(error.issues?.[0]?.path).toBe('(body)');
  });

  it('rejects an empty body with 400 malformed_json', () => {
    const error = thrown(() => jsonBody(request({ bodyText: undefined })));
    expect(error.code).toBe('malformed_json');
    expect(error.message).toBe('request body is empty');
  });
});

describe('route', () => {
  const ok = async () => ({ statusCode: 200 });
  const get = async () => ({ statusCode: 201 });
  const routes: Route[] = [
    { path: '/jobs', methods: { POST: ok }, access: {} },
    { path: '/jobs/{id}', methods: { GET: get, DELETE: ok }, access: {} },
  ];

  it('finds the handler and decodes percent-encoded params', () => {
    const found = route(routes, request({ method: 'GET', path: '/jobs/a%20b%2Fc' }));
    expect(found.handler).toBe(get);
    expect(found.params).toEqual({ id: 'a b/c' });
  });

  it('answers 404 route_not_found for an unknown path', () => {
    const error = thrown(() => route(routes, request({ method: 'GET', path: '/nope' })));
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error.code).toBe('route_not_found');
    expect(error.message).toBe('no route for GET /nope');
  });

  it('answers 404 for a param that is not valid percent-encoding, and for extra segments', () => {
    expect(thrown(() => route(routes, request({ method: 'GET', path: '/jobs/%E0%A4%A' }))).status).toBe(404);
    expect(thrown(() => route(routes, request({ method: 'GET', path: '/jobs/a/b' }))).status).toBe(404);
  });

  it('answers 405 with the allowed methods for a known path', () => {
    const error = thrown(() => route(routes, request({ method: 'PUT', path: '/jobs/x' })));
    expect(error).toBeInstanceOf(MethodNotAllowedError);
    expect((error as MethodNotAllowedError).allow).toEqual(['GET', 'DELETE']);
    const { response } = errorResponse(error, 'req-9');
    expect(response.statusCode).toBe(405);
    expect(response.headers?.allow).toBe('GET, DELETE');
  });
});

describe('errorResponse', () => {
  const body = (response: { body?: string }) => JSON.parse(response.body ?? 'null');

  it('gives a 4xx its code, message and issues, and the request id header', () => {
    const error = new ValidationError('invalid enqueue request', [{ path: 'payload.to', message: 'Required' }]);
    const { response, internal } = errorResponse(error, 'req-1');
    expect(internal).toBe(false);
    expect(response.statusCode).toBe(400);
    expect(response.headers).toEqual({ 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'req-1' });
    expect(body(response)).toEqual({
      error: {
        code: 'validation_failed',
        message: 'invalid enqueue request',
        issues: [{ path: 'payload.to', message: 'Required' }],
      },
    });
  });

  it('omits issues when there are none', () => {
    expect(body(errorResponse(new ConflictError('id reused', 'id_conflict'), 'r').response)).toEqual({
      error: { code: 'id_conflict', message: 'id reused' },
    });
  });

  it('tells a throttled caller to retry after 1 s', () => {
    const { response, internal } = errorResponse(new ThrottledError('AWS throttled x; retry shortly'), 'r');
    expect(response.statusCode).toBe(429);
    expect(response.headers?.['retry-after']).toBe('1');
    expect(internal).toBe(false);
  });

  it('answers 500 for a non-Orrery error without its message or stack, with the request id', () => {
    const error = new Error('password=hunter2 at db.internal:5432');
    const { response, internal } = errorResponse(error, 'req-500');
    expect(internal).toBe(true);
    expect(response.statusCode).toBe(500);
    expect(body(response)).toEqual({
      error: {
        code: 'internal_error',
        message: 'internal error; see the logs for this request id',
        requestId: 'req-500',
      },
    });
    expect(response.body).not.toContain('hunter2');
    expect(response.body).not.toContain('    at ');
    expect(response.headers?.['x-request-id']).toBe('req-500');
  });

  it('hides the message of a non-retryable 5xx Orrery error', () => {
    const { response } = errorResponse(new ConfigError('ORRERY_TABLE is not set'), 'r');
    expect(response.statusCode).toBe(500);
    expect(response.body).not.toContain('ORRERY_TABLE');
  });

  it('hides anything thrown that is not an Error', () => {
    const { response } = errorResponse('secret string', 'r');
    expect(response.statusCode).toBe(500);
    expect(response.body).not.toContain('secret');
  });

  it('answers 503 with retry-after and the request id for a dependency failure', () => {
    const { response, internal } = errorResponse(new DependencyError('DynamoDB GetItem failed'), 'req-503');
    expect(internal).toBe(true);
    expect(response.statusCode).toBe(503);
    expect(response.headers?.['retry-after']).toBe('1');
    expect(body(response).error).toMatchObject({ code: 'dependency_failed', requestId: 'req-503' });
    expect(response.body).not.toContain('    at ');
  });

  it('does not echo the message of the underlying (non-Orrery) error in a 503', () => {
    const network = Object.assign(new Error('getaddrinfo ENOTFOUND ddb.vpce-0a1b2c.internal'), { code: 'ENOTFOUND' });
    let translated: unknown;
    try {
      translateAwsError(network, 'DynamoDB GetItem');
    } catch (error) {
      translated = error;
    }
    expect(translated).toBeInstanceOf(DependencyError);
    const { response } = errorResponse(translated, 'req-503');
    expect(response.statusCode).toBe(503);
    expect(response.body).not.toContain('ENOTFOUND');
    expect(response.body).not.toContain('vpce-0a1b2c');
  });
});
