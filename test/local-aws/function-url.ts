import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyResultV2,
  APIGatewayProxyStructuredResultV2,
  Context,
} from 'aws-lambda';
import { lambdaContext, withLambdaTimeout } from './lambda-context';
import { type LocalSecrets, verifySigV4 } from './sigv4-verify';
import { LOCAL_ACCOUNT_ID } from './sqs';

/** A Function URL handler (payload format 2.0). May return a structured result, a string or any JSON value. */
export type FunctionUrlHandler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyResultV2<unknown>>;

/** A local caller: the credentials it signs with and the IAM identity AWS would resolve them to. */
export interface LocalCaller {
  accessKeyId: string;
  secretAccessKey: string;
  /**
   * The ARN the caller signs as, e.g. an assumed role with its session
   * (`arn:aws:sts::000000000000:assumed-role/billing/ci`) or a user.
   */
  arn: string;
}

/** The identity a request signed with any other access key gets (the default local credentials). */
export const LOCAL_USER_ARN = `arn:aws:iam::${LOCAL_ACCOUNT_ID}:user/local`;

/** Options for {@link startFunctionUrlServer}. */
export interface FunctionUrlServerOptions {
  handler: FunctionUrlHandler;
  /** @default 0 (a free port) */
  port?: number;
  /** @default '127.0.0.1' */
  host?: string;
  /** @default 'orrery-api' */
  functionName?: string;
  /** The function's timeout; a slower handler gets a 502. @default 30_000 */
  timeoutMs?: number;
  /**
   * `AWS_IAM` rejects requests without a SigV4 `Authorization` header (403) and fills
   * `requestContext.authorizer.iam` from the signing access key. The signature itself is
   * verified only when `secrets` is given. @default 'NONE'
   */
  authType?: 'NONE' | 'AWS_IAM';
  /**
   * With `AWS_IAM`: the secret access key of each access key id that may call. Each request's
   * signature (service `lambda`, this `region`) is then computed again and compared, as AWS
   * does; an unknown key, a wrong signature or one dated more than 15 minutes off → 403.
   * @default none: any well-formed Authorization header is accepted
   */
  secrets?: LocalSecrets;
  /**
   * With `AWS_IAM`: callers with identities of their own. Their secrets are verified beside
   * `secrets` (when those are given, or when callers are), and `requestContext.authorizer.iam`
   * carries each one's ARN; any other access key signs as {@link LOCAL_USER_ARN}.
   * @default none
   */
  callers?: readonly LocalCaller[];
  /**
   * Requests it takes (resolves to true) never reach the function: `npm run dev` serves the
   * dashboard (`/ui/`, `/api/`) beside the API this way. @default none
   */
  fallback?: (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;
  /** @default 'us-east-1' */
  region?: string;
}

/** A running Function URL emulator. */
export interface FunctionUrlServer {
  /** `http://127.0.0.1:PORT` (no trailing slash). */
  url: string;
  stop(): Promise<void>;
}

/** Function URLs reject invocation payloads above 6 MB. */
export const FUNCTION_URL_MAX_BYTES = 6 * 1024 * 1024;
const TOO_LARGE = {
  Message: `Request must be smaller than ${FUNCTION_URL_MAX_BYTES} bytes for the InvokeFunction operation`,
};
/** Content types Function URLs pass as text; everything else (and no content type) is base64. */
const TEXT_TYPES = /^(text\/[^;]*|application\/(json|xml|javascript))\s*(;|$)/i;

/**
 * Serves a Lambda Function URL handler over HTTP on 127.0.0.1: each request becomes a
 * payload-format-2.0 event (lower-cased, comma-joined headers; `cookies`; raw and parsed
 * query; base64 body for binary content types), and the handler's result is mapped back the
 * way Function URLs do: `{ statusCode, headers, body, isBase64Encoded, cookies }` as given;
 * any other value → 200 `application/json` with the value serialised as JSON. A throw or
 * timeout → 502 `{"Message":"Internal Server Error"}`; a payload over 6 MB → 413.
 *
 * @example
 * const api = await startFunctionUrlServer({ handler: apiHandler });
 * const res = await fetch(`${api.url}/jobs`, { method: 'POST', body: JSON.stringify(job), headers: { 'content-type': 'application/json' } });
 * await api.stop();
 */
export async function startFunctionUrlServer(options: FunctionUrlServerOptions): Promise<FunctionUrlServer> {
  const region = options.region ?? 'us-east-1';
  const urlId = randomBytes(16).toString('hex');
  const callers = options.callers ?? [];
  const arns = new Map(callers.map((caller) => [caller.accessKeyId, caller.arn]));
  const secrets: LocalSecrets | undefined =
    options.secrets || callers.length > 0
      ? {
          ...options.secrets,
          ...Object.fromEntries(callers.map((caller) => [caller.accessKeyId, caller.secretAccessKey])),
        }
      : undefined;
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, { Message: String(error) });
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (options.fallback && (await options.fallback(req, res))) return;
    const body = await readBody(req);
    if (body === 'too-large') return send(res, 413, TOO_LARGE);
    const authorization = req.headers.authorization ?? '';
    const accessKey = /^AWS4-HMAC-SHA256 Credential=([^/]+)\//.exec(authorization)?.[1];
    if (options.authType === 'AWS_IAM' && !accessKey) return send(res, 403, { Message: 'Forbidden' });
    if (options.authType === 'AWS_IAM' && secrets) {
      const verdict = await verifySigV4(
        { method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body },
        secrets,
        region,
      );
      if (!verdict.ok) return send(res, 403, { Message: verdict.reason });
    }

    const event = toEvent(req, body, {
      urlId,
      region,
      accessKey: options.authType === 'AWS_IAM' ? accessKey : undefined,
      arn: (accessKey && arns.get(accessKey)) ?? LOCAL_USER_ARN,
    });
    if (Buffer.byteLength(JSON.stringify(event)) > FUNCTION_URL_MAX_BYTES) return send(res, 413, TOO_LARGE);
    const timeoutMs = options.timeoutMs ?? 30_000;
    const context = lambdaContext({
      functionName: options.functionName ?? 'orrery-api',
      timeoutMs,
      region,
      awsRequestId: event.requestContext.requestId,
    });
    res.setHeader('x-amzn-requestid', event.requestContext.requestId);
    let result: unknown;
    try {
      result = await withLambdaTimeout(timeoutMs, () => options.handler(event, context));
    } catch {
      return send(res, 502, { Message: 'Internal Server Error' });
    }
    writeResult(res, result);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

/** Builds the 2.0 event for one request (exported for unit tests of handlers). */
export function toEvent(
  req: IncomingMessage,
  body: Buffer,
  ctx: { urlId: string; region: string; accessKey?: string | undefined; arn?: string },
): APIGatewayProxyEventV2 {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const headers: Record<string, string> = {};
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = (req.rawHeaders[i] ?? '').toLowerCase();
    const value = req.rawHeaders[i + 1] ?? '';
    headers[name] = headers[name] === undefined ? value : `${headers[name]},${value}`;
  }
  const cookieHeader = headers.cookie;
  delete headers.cookie;
  const sourceIp = (req.socket.remoteAddress ?? '127.0.0.1').replace(/^::ffff:/, '');
  const now = new Date();
  const requestId = randomUUID();
  headers['x-forwarded-for'] ??= sourceIp;
  headers['x-forwarded-proto'] ??= 'http';
  headers['x-forwarded-port'] ??= String(req.socket.localPort ?? '');
  headers['x-amzn-trace-id'] ??=
    `Root=1-${Math.floor(now.getTime() / 1000).toString(16)}-${randomBytes(12).toString('hex')}`;

  const query: Record<string, string> = {};
  for (const [key, value] of url.searchParams) query[key] = query[key] === undefined ? value : `${query[key]},${value}`;
  const rawQueryString = (req.url ?? '').includes('?') ? (req.url ?? '').slice((req.url ?? '').indexOf('?') + 1) : '';
  const rawPath = (req.url ?? '/').split('?')[0] ?? '/';
  const isText = TEXT_TYPES.test(headers['content-type'] ?? '');
  const domainName = `${ctx.urlId}.lambda-url.${ctx.region}.on.aws`;

  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString,
    ...(cookieHeader ? { cookies: cookieHeader.split(/;\s*/).filter(Boolean) } : {}),
    headers,
    ...(Object.keys(query).length > 0 ? { queryStringParameters: query } : {}),
    requestContext: {
      accountId: ctx.accessKey ? LOCAL_ACCOUNT_ID : 'anonymous',
      apiId: ctx.urlId,
      ...(ctx.accessKey ? { authorizer: iamAuthorizer(ctx.accessKey, ctx.arn ?? LOCAL_USER_ARN) } : {}),
      domainName,
      domainPrefix: ctx.urlId,
      http: {
        method: req.method ?? 'GET',
        path: rawPath,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp,
        userAgent: headers['user-agent'] ?? '',
      },
      requestId,
      routeKey: '$default',
      stage: '$default',
      time: clfTime(now),
      timeEpoch: now.getTime(),
    },
    ...(body.length > 0 ? { body: isText ? body.toString('utf8') : body.toString('base64') } : {}),
    isBase64Encoded: body.length > 0 && !isText,
  };
}

function iamAuthorizer(accessKey: string, arn: string) {
  // an assumed role's caller id is `<role id>:<session>`, as AWS fills it
  const session = /:assumed-role\/[^/]+\/(.+)$/.exec(arn)?.[1];
  const callerId = session ? `AROALOCALROLE:${session}` : 'AIDALOCALCALLER';
  return {
    iam: {
      accessKey,
      accountId: LOCAL_ACCOUNT_ID,
      callerId,
      cognitoIdentity: null,
      principalOrgId: null,
      userArn: arn,
      userId: callerId,
    },
  };
}

function writeResult(res: ServerResponse, result: unknown): void {
  const structured =
    typeof result === 'object' && result !== null && 'statusCode' in result
      ? (result as APIGatewayProxyStructuredResultV2)
      : undefined;
  if (!structured) {
    const body = JSON.stringify(result ?? null);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
    return;
  }
  if (
    typeof structured.statusCode !== 'number' ||
    (structured.body !== undefined && typeof structured.body !== 'string')
  ) {
    send(res, 502, { Message: 'Internal Server Error' });
    return;
  }
  const body =
    structured.body === undefined
      ? Buffer.alloc(0)
      : Buffer.from(structured.body, structured.isBase64Encoded ? 'base64' : 'utf8');
  if (body.length > FUNCTION_URL_MAX_BYTES) {
    send(res, 502, { Message: 'Internal Server Error' });
    return;
  }
  for (const [name, value] of Object.entries(structured.headers ?? {})) res.setHeader(name, String(value));
  if (structured.cookies?.length) res.setHeader('set-cookie', structured.cookies);
  res.setHeader('content-length', body.length);
  res.writeHead(structured.statusCode);
  res.end(body);
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Reads the body, giving up (and draining the rest) once it exceeds the 6 MB limit. */
async function readBody(req: IncomingMessage): Promise<Buffer | 'too-large'> {
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > FUNCTION_URL_MAX_BYTES) tooLarge = true;
    if (!tooLarge) chunks.push(chunk);
  }
  return tooLarge ? 'too-large' : Buffer.concat(chunks);
}

/** `07/Sep/2021:22:50:22 +0000`, the format of `requestContext.time`. */
function clfTime(date: Date): string {
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(date.getUTCDate())}/${months[date.getUTCMonth()]}/${date.getUTCFullYear()}:${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())} +0000`;
}
