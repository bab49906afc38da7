/**
 * Calls an API handler (`createApiHandler`) with a Function URL's 2.0 event, as the unit tests of
 * its routes do: the method, path, JSON body, raw query and, when given, the caller's IAM ARN.
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';

type Handler = (event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyResultV2>;

export interface ApiCall {
  method: string;
  path: string;
  body?: unknown;
  /** The caller's IAM ARN (signed calls); absent: an unsigned call. */
  as?: string;
  /** The raw query string, without `?`. */
  query?: string;
}

/** The answer's status and parsed JSON body (untyped: tests read it freely, and parse it with the OpenAPI schemas where its shape is the point). */
// biome-ignore lint/suspicious/noExplicitAny: see above
export async function callApi(api: Handler, call: ApiCall): Promise<{ status: number; body: any }> {
  const { method, path, body, as, query = '' } = call;
  const response = (await api({
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: query,
    ...(query ? { queryStringParameters: Object.fromEntries(new URLSearchParams(query)) } : {}),
    headers: { 'content-type': 'application/json' },
    requestContext: {
      http: { method, path },
      requestId: 'req-1',
      ...(as === undefined ? {} : { authorizer: { iam: { accountId: '123456789012', userArn: as } } }),
    },
    isBase64Encoded: false,
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  } as unknown as APIGatewayProxyEventV2)) as { statusCode: number; body?: string };
  return { status: response.statusCode, body: JSON.parse(response.body ?? 'null') };
}
