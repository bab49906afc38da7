/**
 * The typed client against a real HTTP peer on 127.0.0.1 (node:http): what goes on the wire
 * (method, path, query, body, SigV4 headers), how answers map to typed errors, and retries.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { afterEach, describe, expect, it } from 'vitest';
import {
  Conflict,
  createClient,
  Forbidden,
  InternalError,
  isLocalUrl,
  JobTypeMismatch,
  JobWaitError,
  NotFound,
  OrreryApiError,
  OrreryNetworkError,
  PayloadTooLarge,
  regionFromUrl,
  ServiceUnavailable,
  SigningError,
  Throttled,
  ValidationFailed,
} from '../../shared/client';
import { buildUrl, retryDelay } from '../../shared/client/transport';
import type { JobView } from '../../shared/core/job';

// ------------------------------------------------------------------ a tiny HTTP peer

interface Received {
  method: string;
  /** Raw path and query as sent. */
  rawUrl: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: string;
  json: unknown;
}

type Reply = { status?: number; headers?: Record<string, string>; body?: unknown; raw?: string } | 'destroy' | 'hang';

interface Peer {
  url: string;
  port: number;
  requests: Received[];
  close(): Promise<void>;
}

const peers: Peer[] = [];
afterEach(async () => {
  await Promise.all(peers.splice(0).map((peer) => peer.close()));
});

async function startPeer(reply: (request: Received, index: number) => Reply | Promise<Reply>): Promise<Peer> {
  const requests: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const url = new URL(req.url ?? '/', 'http://peer');
      let json: unknown;
      try {
        json = body ? JSON.parse(body) : undefined;
      } catch {
        json = undefined;
      }
      const received: Received = {
        method: req.method ?? '',
        rawUrl: req.url ?? '',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body,
        json,
      };
      requests.push(received);
      const answer = await reply(received, requests.length - 1);
      if (answer === 'destroy') return req.socket.destroy();
      if (answer === 'hang') return;
      const text = answer.raw ?? (answer.body === undefined ? '' : JSON.stringify(answer.body));
      res.writeHead(answer.status ?? 200, {
        ...(answer.raw === undefined && text ? { 'content-type': 'application/json' } : {}),
        ...answer.headers,
      });
      res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const peer: Peer = {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  peers.push(peer);
  return peer;
}

function jobView(overrides: Partial<JobView> = {}): JobView {
  return {
    id: 'job-1',
    type: 'echo',
    state: 'queued',
    payload: {},
    attempts: 0,
    maxAttempts: 3,
    createdAt: '2026-11-22T10:00:00.000Z',
    updatedAt: '2026-11-22T10:00:00.000Z',
    runAt: '2026-11-22T10:00:00.000Z',
    startedAt: null,
    finishedAt: null,
    lastError: null,
    errors: [],
    progress: null,
    result: null,
    retries: 0,
    ...overrides,
  };
}

/** Fast retries for tests. */
const quickRetry = { retries: 3, baseDelayMs: 1, maxDelayMs: 5 };

// ------------------------------------------------------------------ requests

describe('request building', () => {
  it('enqueue POSTs /jobs with the payload, options and a client-generated UUID id', async () => {
    const peer = await startPeer((req) => ({ status: 201, body: jobView({ id: (req.json as { id: string }).id }) }));
    const client = createClient({ url: peer.url });
    const runAt = new Date('2026-12-01T09:00:00.000Z');
    const { created, job } = await client.enqueue('echo', { hello: 'world' }, { runAt, maxAttempts: 2 });

    expect(created).toBe(true);
    const [request] = peer.requests;
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe('/jobs');
    expect(request?.headers['content-type']).toBe('application/json');
    expect(request?.headers.accept).toBe('application/json');
    const body = request?.json as Record<string, unknown>;
    expect(body).toEqual({
      type: 'echo',
      payload: { hello: 'world' },
      id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      runAt: '2026-12-01T09:00:00.000Z',
      maxAttempts: 2,
    });
    expect(job.id).toBe(body.id);
  });

  it('sends a priority as given, 0 included, in enqueue and batch items', async () => {
    const peer = await startPeer((req) =>
      req.path === '/jobs/batch'
        ? { status: 200, body: { results: [] } }
        : { status: 201, body: jobView({ id: (req.json as { id: string }).id, priority: 0 }) },
    );
    const client = createClient({ url: peer.url });
    const { job } = await client.enqueue('render', {}, { id: 'r-1', priority: 0 });
    expect(job.priority).toBe(0);
    await client.enqueueBatch([{ type: 'render', payload: {}, id: 'r-2', priority: 9 }]);
    expect(peer.requests[0]?.json).toEqual({ type: 'render', payload: {}, id: 'r-1', priority: 0 });
    expect(peer.requests[1]?.json).toEqual({ jobs: [{ type: 'render', payload: {}, id: 'r-2', priority: 9 }] });
  });

  it('enqueue keeps a given id and reports a replay (200) as created: false', async () => {
    const peer = await startPeer(() => ({ status: 200, body: jobView({ id: 'order-7' }) }));
    const client = createClient({ url: peer.url });
    const { created } = await client.enqueue('echo', {}, { id: 'order-7', delaySeconds: 30 });
    expect(created).toBe(false);
    expect(peer.requests[0]?.json).toMatchObject({ id: 'order-7', delaySeconds: 30 });
  });

  it('keeps the base URL path and encodes path segments', async () => {
    const peer = await startPeer(() => ({ body: jobView() }));
    const client = createClient({ url: `${peer.url}/prefix/` });
    await client.get('a.b_c-1');
    await client.latest('send-email');
    await client.cancel('job-1');
    await client.retry('job-1');
    await client.rerun('job-1', { fromStep: 'charge', payload: { total: 42 } });
    await client.rerun('job-2');
    expect(peer.requests.map((r) => `${r.method} ${r.rawUrl}`)).toEqual([
      'GET /prefix/jobs/a.b_c-1',
      'GET /prefix/types/send-email/latest',
      'POST /prefix/jobs/job-1/cancel',
      'POST /prefix/jobs/job-1/retry',
      'POST /prefix/jobs/job-1/rerun',
      'POST /prefix/jobs/job-2/rerun',
    ]);
    expect(peer.requests[4]?.json).toEqual({ fromStep: 'charge', payload: { total: 42 } });
    expect(peer.requests[5]?.json).toEqual({});
    expect(peer.requests[0]?.headers['content-type']).toBeUndefined();
  });

  it('encodes query values the way SigV4 canonicalises them (RFC 3986, + as %2B)', () => {
    const url = buildUrl(new URL('http://h/'), '/jobs', {
      createdAfter: '2026-01-01T00:00:00+02:00',
      type: "a b!'()*",
      skipped: undefined,
      at: new Date('2026-01-01T00:00:00Z'),
    });
    expect(url.search).toBe(
      '?createdAfter=2026-01-01T00%3A00%3A00%2B02%3A00&type=a%20b%21%27%28%29%2A&at=2026-01-01T00%3A00%3A00.000Z',
    );
  });

  it('list sends the filter as query parameters and iterates items across pages', async () => {
    const pages: Record<string, { items: { id: string }[]; nextCursor: string | null }> = {
      '': { items: [{ id: 'a' }, { id: 'b' }], nextCursor: 'c1' },
      c1: { items: [], nextCursor: 'c2' }, // a filtered page may be empty and still go on
      c2: { items: [{ id: 'c' }], nextCursor: null },
    };
    const peer = await startPeer((req) => ({ body: pages[req.query.get('cursor') ?? ''] }));
    const client = createClient({ url: peer.url });
    const filter = {
      type: 'flaky',
      state: 'failed',
      createdAfter: new Date('2026-11-01T00:00:00.000Z'),
      limit: 2,
    } as const;

    const ids: string[] = [];
    for await (const job of client.list(filter)) ids.push(job.id);
    expect(ids).toEqual(['a', 'b', 'c']);
    expect(peer.requests.map((r) => r.query.get('cursor'))).toEqual([null, 'c1', 'c2']);
    expect(Object.fromEntries(peer.requests[0]?.query ?? [])).toEqual({
      type: 'flaky',
      state: 'failed',
      createdAfter: '2026-11-01T00:00:00.000Z',
      limit: '2',
    });

    const pageSizes: number[] = [];
    for await (const page of client.list(filter).pages()) pageSizes.push(page.items.length);
    expect(pageSizes).toEqual([2, 0, 1]);

    peer.requests.length = 0;
    expect((await client.list(filter).toArray({ max: 2 })).map((j) => j.id)).toEqual(['a', 'b']);
    expect(peer.requests).toHaveLength(1); // stops reading once it has enough
  });

  it('list starts at a given cursor and stops when a cursor repeats', async () => {
    const peer = await startPeer(() => ({ body: { items: [{ id: 'x' }], nextCursor: 'same' } }));
    const client = createClient({ url: peer.url });
    const all = await client.list({ cursor: 'same' }).toArray();
    expect(all).toHaveLength(2);
    expect(peer.requests.map((r) => r.query.get('cursor'))).toEqual(['same', 'same']);
  });

  it('enqueueBatch sends { jobs } with an id for every item and returns the results', async () => {
    const peer = await startPeer((req) => ({
      body: {
        results: (req.json as { jobs: { id: string }[] }).jobs.map((job, index) => ({
          index,
          status: 'created',
          job: { id: job.id },
        })),
      },
    }));
    const client = createClient({ url: peer.url });
    const results = await client.enqueueBatch([
      { type: 'echo', payload: { n: 1 } },
      { type: 'echo', payload: { n: 2 }, id: 'mine', delaySeconds: 5 },
    ]);
    const jobs = (peer.requests[0]?.json as { jobs: Record<string, unknown>[] } | undefined)?.jobs ?? [];
    expect(peer.requests[0]?.path).toBe('/jobs/batch');
    expect(jobs[0]).toMatchObject({ type: 'echo', payload: { n: 1 }, id: expect.any(String) });
    expect(jobs[1]).toEqual({ type: 'echo', payload: { n: 2 }, id: 'mine', delaySeconds: 5 });
    expect(results.map((r) => r.status)).toEqual(['created', 'created']);
  });

  it('createFlow posts the jobs with their dependsOn under a flow id; getFlow reads it', async () => {
    const peer = await startPeer((req) =>
      req.method === 'POST'
        ? {
            status: 201,
            body: { id: (req.json as { id: string }).id, createdAt: '2026-06-01T00:00:00.000Z', nodes: [] },
          }
        : { body: { id: 'f1', createdAt: '2026-06-01T00:00:00.000Z', nodes: [] } },
    );
    const client = createClient({ url: peer.url });
    const out = await client.createFlow(
      [
        { id: 'a', type: 'echo', payload: { n: 1 } },
        { id: 'b', type: 'echo', payload: { n: 2 }, dependsOn: ['a', { id: 'x', onParentFailure: 'ignore' }] },
      ],
      { id: 'f1' },
    );
    expect(out.created).toBe(true);
    expect(peer.requests[0]?.path).toBe('/flows');
    expect(peer.requests[0]?.json).toEqual({
      id: 'f1',
      jobs: [
        { id: 'a', type: 'echo', payload: { n: 1 } },
        { id: 'b', type: 'echo', payload: { n: 2 }, dependsOn: ['a', { id: 'x', onParentFailure: 'ignore' }] },
      ],
    });
    expect((await client.getFlow('f1')).id).toBe('f1');
    expect(peer.requests[1]).toMatchObject({ method: 'GET', path: '/flows/f1' });
  });

  it('dlq, schedules and openapi call their routes', async () => {
    const peer = await startPeer((req) => {
      if (req.method === 'DELETE') return { status: 204 };
      if (req.rawUrl.startsWith('/schedules?') || (req.rawUrl === '/schedules' && req.method === 'GET')) {
        const cursor = req.query.get('cursor');
        return { body: { schedules: [{ name: cursor ?? 'first' }], nextCursor: cursor ? null : 'first' } };
      }
      return { status: req.rawUrl === '/schedules' ? 201 : 200, body: { name: 'nightly' } };
    });
    const client = createClient({ url: peer.url });
    await client.dlq.list('echo', { limit: 5 });
    await client.dlq.redrive('echo', { maxMessages: 10 });
    const created = await client.schedules.create({ name: 'nightly', type: 'echo', payload: {}, rate: '1 day' });
    expect(created).toEqual({ created: true, schedule: { name: 'nightly' } });
    await client.schedules.get('nightly');
    const names = (await client.schedules.list({ limit: 1 }).toArray()).map((schedule) => schedule.name);
    expect(names).toEqual(['first', 'first']);
    await client.schedules.update('nightly', {
      type: 'echo',
      payload: {},
      cron: '0 3 * * *',
      timezone: 'Europe/Paris',
    });
    await client.schedules.pause('nightly');
    await client.schedules.resume('nightly');
    await expect(client.schedules.delete('nightly')).resolves.toBeUndefined();
    await client.openApi();
    expect(peer.requests.map((r) => `${r.method} ${r.rawUrl} ${r.body}`)).toEqual([
      'GET /dlq?type=echo&limit=5 ',
      'POST /dlq/redrive {"type":"echo","maxMessages":10}',
      'POST /schedules {"name":"nightly","type":"echo","payload":{},"rate":"1 day"}',
      'GET /schedules/nightly ',
      'GET /schedules?limit=1 ',
      'GET /schedules?limit=1&cursor=first ',
      'PUT /schedules/nightly {"type":"echo","payload":{},"cron":"0 3 * * *","timezone":"Europe/Paris"}',
      'POST /schedules/nightly/pause ',
      'POST /schedules/nightly/resume ',
      'DELETE /schedules/nightly ',
      'GET /openapi.json ',
    ]);
  });

  it('overview, bulk, schedules.run and a payload search call their routes', async () => {
    const peer = await startPeer((req) => {
      if (req.path === '/jobs/bulk') return { body: { results: [{ id: 'a', status: 'applied', state: 'queued' }] } };
      if (req.path.endsWith('/run'))
        return { status: req.headers['idempotency-key'] === 'k-1' ? 200 : 201, body: { job: jobView() } };
      if (req.path === '/jobs') return { body: { items: [], nextCursor: null } };
      return { body: { generatedAt: 'x', windowStart: 'y', bucketMs: 60000, types: [] } };
    });
    const client = createClient({ url: peer.url, retry: quickRetry });
    await client.overview();
    await client.overview({ windowMinutes: 30 });
    expect(await client.bulk('retry', ['a'])).toEqual([{ id: 'a', status: 'applied', state: 'queued' }]);
    expect(await client.schedules.run('nightly')).toEqual({ created: true, job: jobView() });
    expect(await client.schedules.run('nightly', { idempotencyKey: 'k-1', id: 'run-1' })).toEqual({
      created: false,
      job: jobView(),
    });
    await client.list({ type: 'echo', payload: { 'to.domain': 'x.org', n: 2, ok: true } }).toArray();
    expect(peer.requests.map((r) => `${r.method} ${r.rawUrl} ${r.body}`)).toEqual([
      'GET /overview ',
      'GET /overview?windowMinutes=30 ',
      'POST /jobs/bulk {"action":"retry","ids":["a"]}',
      'POST /schedules/nightly/run ',
      'POST /schedules/nightly/run {"id":"run-1"}',
      'GET /jobs?type=echo&payload.to.domain=x.org&payload.n=2&payload.ok=true ',
    ]);
    // a generated key (a UUID) unless one is given, so a retried request cannot run the schedule twice
    expect(String(peer.requests[3]?.headers['idempotency-key'])).toMatch(/^[0-9a-f-]{36}$/);
    expect(peer.requests[4]?.headers['idempotency-key']).toBe('k-1');
  });

  it('rejects a non-http URL and a jobs record whose key is not the spec type', () => {
    expect(() => createClient({ url: 'ftp://x' })).toThrow(/http/);
    const spec = { type: 'echo' } as never;
    expect(() => createClient({ url: 'http://127.0.0.1:1', jobs: { other: spec } })).toThrow(/key must match/);
  });

  it('takes definitions (defineJob results) in a jobs record, checked by their spec type', () => {
    const definition = { spec: { type: 'echo' }, run: async () => null } as never;
    expect(() => createClient({ url: 'http://127.0.0.1:1', jobs: { echo: definition } })).not.toThrow();
    expect(() => createClient({ url: 'http://127.0.0.1:1', jobs: { other: definition } })).toThrow(
      'jobs.other is the spec of "echo"; the key must match',
    );
  });

  it('signal sends the same request with or without the type it is typed by', async () => {
    const receipt = { jobId: 'o-1', signal: 'payment', receivedAt: '', resumed: true, late: false, duplicate: false };
    const peer = await startPeer(() => ({ status: 202, body: receipt }));
    const client = createClient({ url: peer.url });
    await client.signal('o-1', 'payment', { amount: 1 });
    await client.signal('o-1', 'payment', { amount: 1 }, { type: 'order' });
    await client.signal('o-1', 'go');
    const sent = peer.requests.map((r) => ({ method: r.method, rawUrl: r.rawUrl, json: r.json }));
    expect(sent[0]).toEqual({ method: 'POST', rawUrl: '/jobs/o-1/signals/payment', json: { payload: { amount: 1 } } });
    expect(sent[1]).toEqual(sent[0]);
    expect(sent[2]?.json).toEqual({ payload: null });
  });
});

// ------------------------------------------------------------------ signing

const credentials = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  sessionToken: 'tok',
};

/** Re-signs what arrived, with the same key and date, and returns the Authorization header it gives. */
async function expectedAuthorization(request: Received, region: string, host?: string): Promise<string> {
  const signedHeaders = /SignedHeaders=([^,]+)/.exec(String(request.headers.authorization))?.[1]?.split(';') ?? [];
  const headers: Record<string, string> = {};
  for (const name of signedHeaders) headers[name] = String(request.headers[name]);
  if (host) headers.host = host;
  const amzDate = String(request.headers['x-amz-date']);
  const signingDate = new Date(
    `${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`,
  );
  const signer = new SignatureV4({ service: 'lambda', region, credentials, sha256: Sha256 });
  const signed = await signer.sign(
    {
      method: request.method,
      protocol: 'https:',
      hostname: headers.host ?? '',
      path: request.path,
      query: Object.fromEntries(request.query),
      headers,
      ...(request.body ? { body: request.body } : {}),
    },
    { signingDate },
  );
  return String(signed.headers.authorization);
}

describe('signing', () => {
  it('does not sign requests to 127.0.0.1, localhost or [::1] by default', async () => {
    const peer = await startPeer(() => ({ body: jobView() }));
    const client = createClient({ url: peer.url, credentials });
    expect(client.signed).toBe(false);
    await client.get('job-1');
    expect(peer.requests[0]?.headers.authorization).toBeUndefined();
    expect(peer.requests[0]?.headers['x-amz-date']).toBeUndefined();
    expect(isLocalUrl(new URL('http://localhost:4600'))).toBe(true);
    expect(isLocalUrl(new URL('http://[::1]:4600'))).toBe(true);
    expect(isLocalUrl(new URL('https://abc.lambda-url.us-east-1.on.aws/'))).toBe(false);
  });

  it('signs with SigV4 (service lambda) when asked, and the signature matches what was sent', async () => {
    const peer = await startPeer(() => ({ status: 201, body: jobView() }));
    const client = createClient({ url: peer.url, sign: true, region: 'eu-central-1', credentials });
    expect(client.signed).toBe(true);
    await client.enqueue('echo', { text: 'ünïcode + spaces' }, { id: 'signed-1' });
    await client
      .list({ type: 'echo', createdAfter: '2026-01-01T00:00:00+02:00' })
      .toArray({ max: 1 })
      .catch(() => {});

    for (const request of peer.requests) {
      const auth = String(request.headers.authorization);
      expect(auth).toMatch(
        /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-central-1\/lambda\/aws4_request, SignedHeaders=[^,]*host[^,]*, Signature=[0-9a-f]{64}$/,
      );
      expect(request.headers['x-amz-security-token']).toBe('tok');
      expect(await expectedAuthorization(request, 'eu-central-1')).toBe(auth);
    }
    expect(peer.requests[1]?.rawUrl).toContain('createdAfter=2026-01-01T00%3A00%3A00%2B02%3A00');
  });

  it('signs by default for a remote URL, for the region in a Function URL host', async () => {
    const peer = await startPeer(() => ({ body: jobView() }));
    const remote = 'https://abcdef123456.lambda-url.eu-west-1.on.aws';
    // A real request to the local peer, sent as if to the Function URL (the peer stands in for it).
    const toPeer: typeof fetch = (input, init) => fetch(String(input).replace(remote, peer.url), init);
    const client = createClient({ url: remote, credentials, fetch: toPeer });
    expect(client.signed).toBe(true);
    await client.get('job-1');
    const request = peer.requests[0] as Received;
    expect(String(request.headers.authorization)).toContain('/eu-west-1/lambda/aws4_request');
    expect(await expectedAuthorization(request, 'eu-west-1', new URL(remote).host)).toBe(request.headers.authorization);
    expect(regionFromUrl(new URL(remote))).toBe('eu-west-1');
    expect(regionFromUrl(new URL('https://example.com'))).toBeUndefined();
  });

  it('a credential failure is a SigningError and nothing is sent', async () => {
    const peer = await startPeer(() => ({ body: jobView() }));
    const client = createClient({
      url: peer.url,
      sign: true,
      credentials: async () => {
        throw new Error('Could not load credentials from any providers');
      },
    });
    const error = (await client.get('x').catch((e: unknown) => e)) as SigningError;
    expect(error).toBeInstanceOf(SigningError);
    expect(error.message).toContain('Could not load credentials from any providers');
    expect(error.message).toContain('sign: false');
    expect(peer.requests).toHaveLength(0);
  });

  it('sign: false sends remote requests unsigned; a signer function signs its own way', async () => {
    const peer = await startPeer(() => ({ body: jobView() }));
    const remote = 'https://abcdef123456.lambda-url.eu-west-1.on.aws';
    const toPeer: typeof fetch = (input, init) => fetch(String(input).replace(remote, peer.url), init);
    const unsigned = createClient({ url: remote, sign: false, fetch: toPeer });
    expect(unsigned.signed).toBe(false);
    await unsigned.get('job-1');
    expect(peer.requests[0]?.headers.authorization).toBeUndefined();

    const seen: string[] = [];
    const custom = createClient({
      url: peer.url,
      sign: async ({ method, url, headers, body }) => {
        seen.push(`${method} ${url.pathname} ${body}`);
        return { ...headers, authorization: 'Custom token' };
      },
    });
    await custom.enqueue('echo', {}, { id: 'c-1' });
    expect(seen).toEqual([`POST /jobs ${JSON.stringify({ type: 'echo', payload: {}, id: 'c-1' })}`]);
    expect(peer.requests[1]?.headers.authorization).toBe('Custom token');
  });
});

// ------------------------------------------------------------------ errors

describe('error mapping', () => {
  const cases: [number, unknown, new (...args: never[]) => OrreryApiError, string][] = [
    [
      400,
      { error: { code: 'invalid_payload', message: 'bad', issues: [{ path: 'payload.n', message: 'nope' }] } },
      ValidationFailed,
      'invalid_payload',
    ],
    [403, { Message: 'Forbidden' }, Forbidden, 'forbidden'],
    [404, { error: { code: 'job_not_found', message: 'job x not found' } }, NotFound, 'job_not_found'],
    [409, { error: { code: 'id_conflict', message: 'exists', jobId: 'x' } }, Conflict, 'id_conflict'],
    [
      413,
      { error: { code: 'payload_too_large', message: 'big', limitBytes: 262_144 } },
      PayloadTooLarge,
      'payload_too_large',
    ],
    [
      500,
      { error: { code: 'internal_error', message: 'boom', requestId: 'req-500' } },
      InternalError,
      'internal_error',
    ],
    [502, 'Bad Gateway', InternalError, 'http_502'],
    [
      415,
      { error: { code: 'unsupported_media_type', message: 'json please' } },
      OrreryApiError,
      'unsupported_media_type',
    ],
  ];

  it.each(cases)('HTTP %i → %s', async (status, body, Class, code) => {
    const peer = await startPeer(() =>
      typeof body === 'string'
        ? { status, raw: body, headers: { 'x-request-id': 'req-h' } }
        : { status, body, headers: { 'x-request-id': 'req-h' } },
    );
    const client = createClient({ url: peer.url, retry: false });
    const error = await client.get('x').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Class);
    expect(error).toBeInstanceOf(OrreryApiError);
    const apiError = error as OrreryApiError;
    expect(apiError.status).toBe(status);
    expect(apiError.code).toBe(code);
    expect(apiError.method).toBe('GET');
    expect(apiError.path).toBe('/jobs/x');
    expect(apiError.requestId).toBe(status === 500 ? 'req-500' : 'req-h');
  });

  it('carries issues and extra fields, and serialises back to the API shape', async () => {
    const peer = await startPeer(() => ({
      status: 413,
      body: { error: { code: 'payload_too_large', message: 'big', limitBytes: 10 } },
    }));
    const error = (await createClient({ url: peer.url })
      .enqueue('echo', {})
      .catch((e: unknown) => e)) as PayloadTooLarge;
    expect(error.details).toEqual({ limitBytes: 10 });
    expect(error.toJSON()).toEqual({
      error: { status: 413, code: 'payload_too_large', message: 'big', limitBytes: 10 },
    });

    const peer2 = await startPeer(() => ({
      status: 400,
      body: {
        error: { code: 'invalid_payload', message: 'bad', issues: [{ path: 'payload.n', message: 'nope' }, 'junk'] },
      },
    }));
    const invalid = (await createClient({ url: peer2.url })
      .enqueue('echo', {})
      .catch((e: unknown) => e)) as ValidationFailed;
    expect(invalid.issues).toEqual([{ path: 'payload.n', message: 'nope' }]);
    expect(invalid.retryable).toBe(false);
    expect(invalid.name).toBe('ValidationFailed');
  });

  it('a 2xx answer that is not JSON is an invalid_response error', async () => {
    const peer = await startPeer(() => ({ status: 200, raw: '<html>proxy</html>' }));
    const error = (await createClient({ url: peer.url })
      .get('x')
      .catch((e: unknown) => e)) as OrreryApiError;
    expect(error.code).toBe('invalid_response');
  });
});

// ------------------------------------------------------------------ retries

describe('retries', () => {
  it('retries 503 and 429 with the same body (same client-generated id), then succeeds', async () => {
    const peer = await startPeer((_req, i) =>
      i === 0
        ? {
            status: 503,
            body: { error: { code: 'dependency_failed', message: 'later' } },
            headers: { 'retry-after': '0' },
          }
        : i === 1
          ? { status: 429, body: { error: { code: 'throttled', message: 'slow down' } } }
          : { status: 201, body: jobView() },
    );
    const client = createClient({ url: peer.url, retry: quickRetry });
    const { created } = await client.enqueue('echo', { n: 1 });
    expect(created).toBe(true);
    expect(peer.requests).toHaveLength(3);
    const ids = peer.requests.map((r) => (r.json as { id: string }).id);
    expect(new Set(ids).size).toBe(1);
  });

  it('gives up after the configured retries with the typed error and the attempt count', async () => {
    const peer = await startPeer(() => ({ status: 429, body: { error: { code: 'throttled', message: 'slow down' } } }));
    const error = (await createClient({ url: peer.url, retry: { ...quickRetry, retries: 2 } })
      .get('x')
      .catch((e: unknown) => e)) as Throttled;
    expect(error).toBeInstanceOf(Throttled);
    expect(error.attempts).toBe(3);
    expect(error.retryable).toBe(true);
    expect(peer.requests).toHaveLength(3);
  });

  it('retry: false sends once', async () => {
    const peer = await startPeer(() => ({ status: 503, body: { error: { code: 'dependency_failed', message: 'x' } } }));
    await expect(createClient({ url: peer.url, retry: false }).get('x')).rejects.toBeInstanceOf(ServiceUnavailable);
    expect(peer.requests).toHaveLength(1);
  });

  it('does not retry 4xx other than 429', async () => {
    const peer = await startPeer(() => ({
      status: 409,
      body: { error: { code: 'illegal_state', message: 'x', state: 'succeeded' } },
    }));
    const error = (await createClient({ url: peer.url, retry: quickRetry })
      .cancel('x')
      .catch((e: unknown) => e)) as Conflict;
    expect(error.details).toEqual({ state: 'succeeded' });
    expect(peer.requests).toHaveLength(1);
  });

  it('retries a dropped connection and a 502 only for idempotent requests', async () => {
    const flaky = (answer: Reply) => (_req: Received, i: number) => (i === 0 ? answer : { body: jobView() });

    const get = await startPeer(flaky('destroy'));
    await expect(createClient({ url: get.url, retry: quickRetry }).get('x')).resolves.toMatchObject({ id: 'job-1' });
    expect(get.requests).toHaveLength(2);

    const enqueue = await startPeer(flaky({ status: 502, raw: '{"Message":"Internal Server Error"}' }));
    await createClient({ url: enqueue.url, retry: quickRetry }).enqueue('echo', {});
    expect(enqueue.requests).toHaveLength(2); // idempotent by its id

    const cancel = await startPeer(flaky('destroy'));
    const error = await createClient({ url: cancel.url, retry: quickRetry })
      .cancel('x')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OrreryNetworkError);
    expect(cancel.requests).toHaveLength(1);

    const cancel502 = await startPeer(flaky({ status: 502, raw: '{"Message":"Internal Server Error"}' }));
    const error502 = (await createClient({ url: cancel502.url, retry: quickRetry })
      .cancel('x')
      .catch((e: unknown) => e)) as InternalError;
    expect(error502.message).toBe('Internal Server Error');
    expect(cancel502.requests).toHaveLength(1);
  });

  it('a refused connection is an OrreryNetworkError naming the cause', async () => {
    const peer = await startPeer(() => ({ body: {} }));
    await peer.close();
    const error = (await createClient({ url: peer.url, retry: { ...quickRetry, retries: 1 } })
      .get('x')
      .catch((e: unknown) => e)) as OrreryNetworkError;
    expect(error).toBeInstanceOf(OrreryNetworkError);
    expect(error.message).toContain('ECONNREFUSED');
    expect(error.attempts).toBe(2);
    expect(error.timedOut).toBe(false);
  });

  it('an answer slower than timeoutMs is a network error with timedOut', async () => {
    const peer = await startPeer(() => 'hang');
    const error = (await createClient({ url: peer.url, timeoutMs: 100, retry: false })
      .get('x')
      .catch((e: unknown) => e)) as OrreryNetworkError;
    expect(error).toBeInstanceOf(OrreryNetworkError);
    expect(error.timedOut).toBe(true);
    expect(error.message).toContain('timed out');
  });

  it('backs off with full jitter, at least Retry-After, at most maxDelayMs', () => {
    const options = { retries: 3, baseDelayMs: 100, maxDelayMs: 1000 };
    expect(retryDelay(1, options, 0, () => 0.5)).toBe(50);
    expect(retryDelay(3, options, 0, () => 0.999)).toBe(399);
    expect(retryDelay(10, options, 0, () => 0.999)).toBe(999);
    expect(retryDelay(1, options, 700, () => 0)).toBe(700);
    expect(retryDelay(1, options, 60_000, () => 0)).toBe(1000);
  });
});

// ------------------------------------------------------------------ waitFor

describe('waitFor', () => {
  it('polls until the job is in one of the states', async () => {
    const states = ['queued', 'running', 'running', 'succeeded'] as const;
    const peer = await startPeer((_req, i) => ({ body: jobView({ state: states[Math.min(i, 3)] }) }));
    const seen: string[] = [];
    const job = await createClient({ url: peer.url }).waitFor('job-1', ['succeeded', 'failed'], {
      interval: 5,
      onPoll: (j) => seen.push(j.state),
    });
    expect(job.state).toBe('succeeded');
    expect(seen).toEqual(['queued', 'running', 'running', 'succeeded']);
  });

  it('rejects at once when the job ends in another terminal state', async () => {
    const peer = await startPeer(() => ({
      body: jobView({
        state: 'failed',
        lastError: { attempt: 3, at: '', reason: 'error', name: 'Error', message: 'boom' },
      }),
    }));
    const error = (await createClient({ url: peer.url })
      .waitFor('job-1', 'succeeded', { interval: 5 })
      .catch((e: unknown) => e)) as JobWaitError;
    expect(error).toBeInstanceOf(JobWaitError);
    expect(error.reason).toBe('terminal');
    expect(error.job.state).toBe('failed');
    expect(error.message).toContain('boom');
    expect(peer.requests).toHaveLength(1);
  });

  it('rejects at once with reason held when the job is held for an operator (nothing moves it on its own)', async () => {
    const peer = await startPeer(() => ({
      body: jobView({
        state: 'held',
        lastError: { attempt: 1, at: '', reason: 'nondeterministic', name: 'NondeterminismError', message: 'diverged' },
      }),
    }));
    const error = (await createClient({ url: peer.url })
      .waitFor('job-1', 'succeeded', { interval: 5, timeout: 5_000 })
      .catch((e: unknown) => e)) as JobWaitError;
    expect(error).toBeInstanceOf(JobWaitError);
    expect(error.reason).toBe('held');
    expect(error.job.state).toBe('held');
    expect(error.message).toContain('held for an operator');
    expect(error.message).toContain('diverged');
    expect(peer.requests).toHaveLength(1);
  });

  it('rejects with reason timeout and the last job seen', async () => {
    const peer = await startPeer(() => ({ body: jobView({ state: 'running' }) }));
    const started = Date.now();
    const error = (await createClient({ url: peer.url })
      .waitFor('job-1', 'succeeded', { timeout: 120, interval: 20 })
      .catch((e: unknown) => e)) as JobWaitError;
    expect(error.reason).toBe('timeout');
    expect(error.job.state).toBe('running');
    expect(Date.now() - started).toBeLessThan(2000);
    expect(peer.requests.length).toBeGreaterThan(1);
  });

  it('with a type, returns the job when it is of that type, and throws JobTypeMismatch at once when not', async () => {
    const peer = await startPeer(() => ({ body: jobView({ type: 'echo', state: 'succeeded', result: { n: 1 } }) }));
    const client = createClient({ url: peer.url });
    const done = await client.waitFor('job-1', 'succeeded', { type: 'echo', interval: 5 });
    expect(done.result).toEqual({ n: 1 });
    const error = (await client
      .waitFor('job-1', 'succeeded', { type: 'invoice', interval: 5 })
      .catch((e: unknown) => e)) as JobTypeMismatch;
    expect(error).toBeInstanceOf(JobTypeMismatch);
    expect(error.message).toBe('job job-1 is of type "echo", not "invoice"');
    expect(error.expected).toBe('invoice');
    expect(error.job.type).toBe('echo');
    expect(peer.requests).toHaveLength(2); // one poll each
    await expect(client.get('job-1', { type: 'invoice' })).rejects.toThrow(JobTypeMismatch);
    expect((await client.get('job-1', { type: 'echo' })).id).toBe('job-1');
    expect(peer.requests.every((r) => r.rawUrl === '/jobs/job-1')).toBe(true); // the type is not sent
  });

  it('stops when its signal aborts', async () => {
    const peer = await startPeer(() => ({ body: jobView({ state: 'running' }) }));
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('stop')), 50);
    await expect(
      createClient({ url: peer.url }).waitFor('job-1', 'succeeded', { interval: 10, signal: controller.signal }),
    ).rejects.toThrow('stop');
  });
});
