/**
 * The dashboard's HTTP server: serves the prebuilt web UI under `/ui/` and forwards the UI's
 * API calls (`/api/*`) to an Orrery API, optionally signing each forwarded request with SigV4.
 * It listens on loopback only, so nothing is exposed: the browser talks to this process, and
 * this process talks to the API with the caller's AWS credentials.
 *
 * No framework: one request handler ({@link createDashboardHandler}) that `npm run dev` mounts
 * beside the local API, and a server around it ({@link startDashboardServer}) for
 * `orrery dashboard`.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CredentialsInput, isLocalUrl, type RequestSigner, signingRegion, sigV4Signer } from '../client/signing';

/** Prefix of the UI's pages and assets. */
export const UI_PREFIX = '/ui';
/** Prefix of the API calls the server forwards (`/api/jobs` → `<upstream>/jobs`). */
export const API_PREFIX = '/api';
/**
 * Header every forwarded call must carry. A page on another origin cannot send it without a
 * CORS preflight, which this server never answers, so such a page cannot make the dashboard
 * act with the user's credentials (cross-site request forgery).
 */
export const DASHBOARD_HEADER = 'x-orrery-dashboard';

/** How forwarded requests are signed. */
export type SignMode = 'auto' | 'always' | 'never';

/** Options of {@link createDashboardHandler}. */
export interface DashboardOptions {
  /** The API to forward to, e.g. a Function URL; a function is read at each request. */
  upstream: URL | string | (() => URL | string);
  /**
   * `auto` signs unless the upstream is on loopback (`127.0.0.1`, `localhost`), as the client
   * does; `always` signs every forwarded request (a local API that checks signatures);
   * `never` sends them unsigned.
   * @default 'auto'
   */
  sign?: SignMode;
  /** Region to sign for. @default the Function URL's region, else `AWS_REGION`, `AWS_DEFAULT_REGION`, `us-east-1` */
  region?: string;
  /** @default the AWS SDK's default credential provider chain */
  credentials?: CredentialsInput;
  /** Refuse every forwarded call but GET and HEAD (403 `read_only`), and tell the UI to hide its actions. @default false */
  readOnly?: boolean;
  /** Directory of the built UI (`index.html`, `assets/`). @default {@link defaultAssetsDir}() */
  assetsDir?: string;
  /** How often the UI polls for live updates, in ms. @default 5_000 */
  pollMs?: number;
  /** Time allowed for one forwarded call. @default 30_000 */
  timeoutMs?: number;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
}

/** Handles one request; resolves to false when the path is neither `/ui…` nor `/api/…` (left to the caller). */
export type DashboardHandler = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

/** The built UI was not found. */
export class DashboardAssetsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DashboardAssetsError';
  }
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/** Request headers passed on to the API; everything else (cookies, the browser's own) stays here. */
const FORWARDED_REQUEST_HEADERS = ['content-type', 'accept'];
/** Response headers passed back to the browser. */
const FORWARDED_RESPONSE_HEADERS = ['content-type', 'allow', 'retry-after', 'location', 'x-amzn-requestid'];

/**
 * Where the built UI is: `ui/dist` beside the sources (`shared/dashboard/` → `../../ui/dist`,
 * also the package's `dist/shared/dashboard/` → `dist/ui/dist`), or beside the CLI bundle
 * (`dist/orrery.mjs` → `../ui/dist`). The first that holds an `index.html`, else the first.
 */
export function defaultAssetsDir(moduleUrl: string = import.meta.url): string {
  const here = dirname(fileURLToPath(moduleUrl));
  const candidates = [resolve(here, '..', '..', 'ui', 'dist'), resolve(here, '..', 'ui', 'dist')];
  return candidates.find((dir) => existsSync(join(dir, 'index.html'))) ?? (candidates[0] as string);
}

/**
 * The dashboard's request handler: `/ui` (redirect), `/ui/` and `/ui/…` (the built UI, with
 * `/ui/config.json` telling the UI whether it is read-only), and `/api/…` (forwarded).
 *
 * @example
 * const dashboard = createDashboardHandler({ upstream: 'https://abc.lambda-url.eu-west-1.on.aws', readOnly: true });
 * createServer(async (req, res) => { if (!(await dashboard(req, res))) res.writeHead(404).end(); });
 */
export function createDashboardHandler(options: DashboardOptions): DashboardHandler {
  const assetsDir = resolve(options.assetsDir ?? defaultAssetsDir());
  if (!existsSync(join(assetsDir, 'index.html'))) {
    throw new DashboardAssetsError(
      `no built dashboard in ${assetsDir} (index.html missing); in the repository, run \`npm run build:ui\``,
    );
  }
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const signers = new Map<string, RequestSigner>();
  const upstreamUrl = (): URL => {
    const value = typeof options.upstream === 'function' ? options.upstream() : options.upstream;
    return new URL(value);
  };
  const config = JSON.stringify({
    apiBase: API_PREFIX,
    readOnly: options.readOnly === true,
    pollMs: options.pollMs ?? 5_000,
  });

  function signerFor(url: URL): RequestSigner | undefined {
    const mode = options.sign ?? 'auto';
    if (mode === 'never' || (mode === 'auto' && isLocalUrl(url))) return undefined;
    const region = signingRegion(url, options.region);
    let signer = signers.get(region);
    if (!signer) {
      signer = sigV4Signer({ region, credentials: options.credentials });
      signers.set(region, signer);
    }
    return signer;
  }

  async function forward(req: IncomingMessage, res: ServerResponse, path: string, search: string): Promise<void> {
    const method = req.method ?? 'GET';
    if (req.headers[DASHBOARD_HEADER] !== '1') {
      sendError(
        res,
        403,
        'missing_dashboard_header',
        `API calls through the dashboard must carry ${DASHBOARD_HEADER}: 1`,
      );
      return;
    }
    if (options.readOnly && method !== 'GET' && method !== 'HEAD') {
      sendError(res, 403, 'read_only', 'the dashboard is read-only: only GET requests are forwarded');
      return;
    }
    const body = method === 'GET' || method === 'HEAD' ? undefined : await readBody(req);
    const base = upstreamUrl();
    const url = new URL(base);
    url.pathname = `${base.pathname.replace(/\/+$/, '')}${path}`;
    url.search = search;
    let headers: Record<string, string> = {};
    for (const name of FORWARDED_REQUEST_HEADERS) {
      const value = req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const signer = signerFor(url);
    if (signer) {
      headers = await signer({ method, url, headers, body: body === undefined ? undefined : body.toString('utf8') });
      delete headers.host;
    }
    let response: Response;
    let text: Buffer;
    try {
      response = await fetchImpl(url, {
        method,
        headers,
        signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
        ...(body === undefined ? {} : { body: new Uint8Array(body) }),
      });
      text = Buffer.from(await response.arrayBuffer());
    } catch (error) {
      sendError(res, 502, 'upstream_unreachable', `the API at ${base.origin} did not answer: ${errorMessage(error)}`);
      return;
    }
    const out: Record<string, string> = { 'cache-control': 'no-store' };
    for (const name of FORWARDED_RESPONSE_HEADERS) {
      const value = response.headers.get(name);
      if (value !== null) out[name] = value;
    }
    res.writeHead(response.status, { ...out, 'content-length': String(text.length) });
    res.end(method === 'HEAD' ? undefined : text);
  }

  function serveAsset(req: IncomingMessage, res: ServerResponse, path: string): void {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' });
      res.end();
      return;
    }
    if (path === '/config.json') {
      sendBody(req, res, 200, Buffer.from(config), CONTENT_TYPES['.json'] as string, 'no-store');
      return;
    }
    const relativePath = path === '/' || path === '' ? 'index.html' : path.slice(1);
    let decoded: string;
    try {
      decoded = decodeURIComponent(relativePath);
    } catch {
      sendError(res, 400, 'bad_path', 'the path is not valid percent-encoding');
      return;
    }
    // Never outside the assets directory: no `..`, no absolute paths, no NUL.
    const file = resolve(assetsDir, decoded);
    if (decoded.includes('\0') || (file !== assetsDir && !file.startsWith(`${assetsDir}${sep}`))) {
      sendError(res, 404, 'not_found', 'no such file');
      return;
    }
    let stats: ReturnType<typeof statSync> | undefined;
    try {
      stats = statSync(file);
    } catch {
      stats = undefined;
    }
    if (!stats?.isFile()) {
      sendError(res, 404, 'not_found', 'no such file');
      return;
    }
    const type = CONTENT_TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream';
    // Files under assets/ carry a content hash in their name: cache them for good. The rest (index.html) never.
    const cache = decoded.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache';
    sendBody(req, res, 200, readFileSync(file), type, cache);
  }

  return async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://dashboard');
    const path = url.pathname;
    if (path === UI_PREFIX) {
      res.writeHead(308, { location: `${UI_PREFIX}/${url.search}` });
      res.end();
      return true;
    }
    const isUi = path.startsWith(`${UI_PREFIX}/`);
    const isApi = path.startsWith(`${API_PREFIX}/`);
    if (!isUi && !isApi) return false;
    if (!hostAllowed(req.headers.host)) {
      sendError(res, 403, 'bad_host', 'the dashboard answers only requests addressed to a loopback host');
      return true;
    }
    if (isUi) serveAsset(req, res, path.slice(UI_PREFIX.length));
    else await forward(req, res, path.slice(API_PREFIX.length), url.search);
    return true;
  };
}

/**
 * Only requests addressed to loopback names are served: a DNS-rebinding page (`evil.example`
 * resolved to 127.0.0.1) sends its own host name, and is refused.
 */
function hostAllowed(host: string | undefined): boolean {
  if (!host) return false;
  const name = host.replace(/:\d+$/, '').toLowerCase();
  return name === '127.0.0.1' || name === 'localhost' || name === '[::1]' || name.endsWith('.localhost');
}

function sendBody(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  body: Buffer,
  contentType: string,
  cache: string,
): void {
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'content-type': contentType,
    'content-length': String(body.length),
    'cache-control': cache,
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}

function sendError(res: ServerResponse, status: number, code: string, message: string): void {
  const text = JSON.stringify({ error: { code, message } });
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    'cache-control': 'no-store',
  });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

function errorMessage(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as Error & { cause?: unknown }).cause;
    return cause instanceof Error ? `${error.message} (${cause.message})` : error.message;
  }
  return String(error);
}

/** Options of {@link startDashboardServer}. */
export interface DashboardServerOptions extends DashboardOptions {
  /** @default 4700; 0 picks a free port */
  port?: number;
  /** Loopback only by design. @default '127.0.0.1' */
  host?: string;
}

/** A running dashboard server. */
export interface DashboardServer {
  /** `http://127.0.0.1:PORT` (no trailing slash). */
  url: string;
  /** The dashboard's address: `${url}/ui/`. */
  uiUrl: string;
  stop(): Promise<void>;
}

/**
 * Starts the dashboard on loopback: the UI at `/ui/`, the API behind `/api/`. Other paths
 * answer 404.
 *
 * @example
 * const dashboard = await startDashboardServer({ upstream: process.env.ORRERY_URL!, port: 4700 });
 * console.log(`open ${dashboard.uiUrl}`);
 */
export async function startDashboardServer(options: DashboardServerOptions): Promise<DashboardServer> {
  const handler = createDashboardHandler(options);
  const server = createServer((req, res) => {
    handler(req, res)
      .then((handled) => {
        if (handled) return;
        if (req.url === '/' || req.url === '') {
          res.writeHead(302, { location: `${UI_PREFIX}/` });
          res.end();
          return;
        }
        sendError(res, 404, 'not_found', 'the dashboard serves /ui/ and /api/ only');
      })
      .catch((error: unknown) => {
        if (!res.headersSent) sendError(res, 500, 'internal_error', errorMessage(error));
        else res.destroy();
      });
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 4700, host, resolveListen);
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return {
    url,
    uiUrl: `${url}${UI_PREFIX}/`,
    stop: () =>
      new Promise<void>((resolveClose, reject) => {
        server.close((error) => (error ? reject(error) : resolveClose()));
        server.closeAllConnections();
      }),
  };
}
