import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DASHBOARD_HEADER,
  DashboardAssetsError,
  type DashboardServer,
  defaultAssetsDir,
  startDashboardServer,
} from '../../shared/dashboard/server';
import { verifySigV4 } from '../local-aws/sigv4-verify';

interface Forwarded {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
}

let assets: string;
const forwarded: Forwarded[] = [];
const fakeFetch: typeof fetch = async (input, init) => {
  const headers = Object.fromEntries(Object.entries((init?.headers ?? {}) as Record<string, string>));
  const body = init?.body === undefined ? undefined : Buffer.from(init.body as Uint8Array).toString('utf8');
  forwarded.push({ url: String(input), method: init?.method ?? 'GET', headers, body });
  return new Response(JSON.stringify({ ok: true, path: new URL(String(input)).pathname }), {
    status: 201,
    headers: { 'content-type': 'application/json', 'set-cookie': 'a=b', 'x-amzn-requestid': 'req-1' },
  });
};

const servers: DashboardServer[] = [];
async function start(options: Partial<Parameters<typeof startDashboardServer>[0]> = {}): Promise<DashboardServer> {
  const server = await startDashboardServer({
    upstream: 'https://abc123.lambda-url.eu-west-1.on.aws/',
    assetsDir: assets,
    port: 0,
    fetch: fakeFetch,
    sign: 'never',
    ...options,
  });
  servers.push(server);
  return server;
}

/** A raw request (fetch normalises `..` out of paths; a browser or curl --path-as-is does not). */
function raw(
  url: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ hostname, port, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

const api = { [DASHBOARD_HEADER]: '1' };

beforeAll(() => {
  assets = mkdtempSync(join(tmpdir(), 'orrery-dashboard-'));
  mkdirSync(join(assets, 'assets'));
  writeFileSync(join(assets, 'index.html'), '<!doctype html><title>x</title>');
  writeFileSync(join(assets, 'assets', 'app-ABC.js'), 'console.log(1)');
  writeFileSync(join(assets, 'assets', 'app-ABC.css'), 'body{}');
  writeFileSync(join(assets, '..', 'secret.txt'), 'do not serve');
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  rmSync(assets, { recursive: true, force: true });
  rmSync(join(assets, '..', 'secret.txt'), { force: true });
});

describe('dashboard server: static files', () => {
  it('redirects /ui and / to /ui/, and serves index.html uncached with a strict CSP', async () => {
    const server = await start();
    const ui = await fetch(`${server.url}/ui`, { redirect: 'manual' });
    expect(ui.status).toBe(308);
    expect(ui.headers.get('location')).toBe('/ui/');
    expect((await fetch(`${server.url}/`, { redirect: 'manual' })).headers.get('location')).toBe('/ui/');
    const index = await fetch(`${server.url}/ui/`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(index.headers.get('cache-control')).toBe('no-cache');
    expect(index.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(index.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await index.text()).toContain('<title>x</title>');
  });

  it('serves hashed assets with their content type, cached for good', async () => {
    const server = await start();
    const js = await fetch(`${server.url}/ui/assets/app-ABC.js`);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(await js.text()).toBe('console.log(1)');
    const css = await fetch(`${server.url}/ui/assets/app-ABC.css`);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect((await fetch(`${server.url}/ui/assets/nope.js`)).status).toBe(404);
    expect((await fetch(`${server.url}/ui/assets/app-ABC.js`, { method: 'POST' })).status).toBe(405);
    expect((await fetch(`${server.url}/elsewhere`)).status).toBe(404);
  });

  it('tells the UI its settings in /ui/config.json', async () => {
    const server = await start({ readOnly: true, pollMs: 1234 });
    const config = await fetch(`${server.url}/ui/config.json`);
    expect(config.headers.get('cache-control')).toBe('no-store');
    expect(await config.json()).toEqual({ apiBase: '/api', readOnly: true, pollMs: 1234 });
  });

  it('never serves a file outside the assets directory', async () => {
    const server = await start();
    for (const path of [
      '/ui/../secret.txt',
      '/ui/%2e%2e/secret.txt',
      '/ui/assets/..%2f..%2fsecret.txt',
      '/ui/%2E%2E%2Fsecret.txt',
      `/ui/${encodeURIComponent(join(assets, '..', 'secret.txt'))}`,
      '/ui/index.html%00.js',
    ]) {
      const response = await raw(server.url, path);
      expect(response.status, path).toBeGreaterThanOrEqual(400);
      expect(response.body, path).not.toContain('do not serve');
    }
    expect((await raw(server.url, '/ui/%E0%A4%A')).status).toBe(400);
  });

  it('refuses to start without a built UI, saying how to build it', async () => {
    await expect(start({ assetsDir: join(assets, 'assets') })).rejects.toThrow(DashboardAssetsError);
    await expect(start({ assetsDir: join(assets, 'assets') })).rejects.toThrow(/npm run build:ui/);
  });

  it('finds the built UI beside the sources by default', () => {
    expect(defaultAssetsDir(new URL('file:///pkg/dist/shared/dashboard/server.js').href)).toBe('/pkg/dist/ui/dist');
  });
});

describe('dashboard server: forwarding', () => {
  it('forwards /api/* to the upstream with the path, query, body and content type, and passes the answer back', async () => {
    const server = await start();
    forwarded.length = 0;
    const response = await fetch(`${server.url}/api/jobs/a%20b/retry?x=1&y=2`, {
      method: 'POST',
      headers: { ...api, 'content-type': 'application/json', cookie: 'session=1' },
      body: '{"a":1}',
    });
    expect(response.status).toBe(201);
    expect(response.headers.get('x-amzn-requestid')).toBe('req-1');
    expect(response.headers.get('set-cookie')).toBeNull();
    expect(await response.json()).toEqual({ ok: true, path: '/jobs/a%20b/retry' });
    expect(forwarded).toHaveLength(1);
    expect(forwarded[0]).toMatchObject({
      url: 'https://abc123.lambda-url.eu-west-1.on.aws/jobs/a%20b/retry?x=1&y=2',
      method: 'POST',
      body: '{"a":1}',
    });
    expect(forwarded[0]?.headers).toEqual({ 'content-type': 'application/json', accept: '*/*' });
  });

  it('refuses API calls without the dashboard header (another site cannot send it) or for a foreign host', async () => {
    const server = await start();
    forwarded.length = 0;
    const plain = await fetch(`${server.url}/api/jobs`);
    expect(plain.status).toBe(403);
    expect(await plain.json()).toMatchObject({ error: { code: 'missing_dashboard_header' } });
    const rebound = await raw(server.url, '/api/jobs', { ...api, host: 'evil.example:4700' });
    expect(rebound.status).toBe(403);
    expect(rebound.body).toContain('bad_host');
    expect(forwarded).toHaveLength(0);
  });

  it('in read-only mode, refuses every call but GET with 403 read_only, and forwards nothing', async () => {
    const server = await start({ readOnly: true });
    forwarded.length = 0;
    for (const [method, path] of [
      ['POST', '/api/jobs/x/retry'],
      ['POST', '/api/jobs/bulk'],
      ['PUT', '/api/schedules/s'],
      ['DELETE', '/api/schedules/s'],
    ] as const) {
      const response = await fetch(`${server.url}${path}`, { method, headers: api });
      expect(response.status, `${method} ${path}`).toBe(403);
      expect(await response.json()).toMatchObject({ error: { code: 'read_only' } });
    }
    expect(forwarded).toHaveLength(0);
    expect((await fetch(`${server.url}/api/jobs`, { headers: api })).status).toBe(201);
    expect(forwarded).toHaveLength(1);
  });

  it('answers 502 upstream_unreachable when the API does not answer', async () => {
    const server = await start({
      fetch: async () => {
        throw new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') });
      },
    });
    const response = await fetch(`${server.url}/api/jobs`, { headers: api });
    expect(response.status).toBe(502);
    expect(await response.json()).toMatchObject({ error: { code: 'upstream_unreachable' } });
  });

  it('signs forwarded calls for the Function URL region (auto), with a signature the API accepts', async () => {
    const credentials = { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret' };
    const server = await start({ sign: 'auto', credentials });
    forwarded.length = 0;
    await fetch(`${server.url}/api/jobs?state=failed`, {
      method: 'POST',
      headers: { ...api, 'content-type': 'application/json' },
      body: '{}',
    });
    const sent = forwarded[0];
    expect(sent?.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDTEST\/\d{8}\/eu-west-1\/lambda\/aws4_request/,
    );
    const url = new URL(sent?.url ?? '');
    const verdict = await verifySigV4(
      {
        method: 'POST',
        url: `${url.pathname}${url.search}`,
        headers: { ...sent?.headers, host: url.host },
        body: Buffer.from(sent?.body ?? ''),
      },
      { AKIDTEST: 'secret' },
      'eu-west-1',
    );
    expect(verdict).toEqual({ ok: true, accessKey: 'AKIDTEST' });
    const tampered = await verifySigV4(
      {
        method: 'POST',
        url: `${url.pathname}?state=succeeded`,
        headers: { ...sent?.headers, host: url.host },
        body: Buffer.from('{}'),
      },
      { AKIDTEST: 'secret' },
      'eu-west-1',
    );
    expect(tampered.ok).toBe(false);
  });

  it('does not sign a loopback upstream unless told to always sign', async () => {
    const credentials = { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret' };
    const auto = await start({ sign: 'auto', credentials, upstream: 'http://127.0.0.1:9' });
    const always = await start({ sign: 'always', credentials, upstream: 'http://127.0.0.1:9', region: 'us-east-1' });
    forwarded.length = 0;
    await fetch(`${auto.url}/api/jobs`, { headers: api });
    await fetch(`${always.url}/api/jobs`, { headers: api });
    expect(forwarded[0]?.headers.authorization).toBeUndefined();
    expect(forwarded[1]?.headers.authorization).toMatch(/Credential=AKIDTEST\/\d{8}\/us-east-1\/lambda\//);
  });
});
