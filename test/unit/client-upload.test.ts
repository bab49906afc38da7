/**
 * `client.upload` and the enqueue's automatic upload against a real HTTP peer on 127.0.0.1
 * (node:http) that plays both the API (`POST /uploads`, `POST /jobs`) and S3 (the presigned PUT):
 * what goes on the wire, that the PUT is sent as the API describes it and never signed by the
 * client, and how S3's refusals become the client's errors. The same path end to end on local AWS
 * (fauxqs S3) is in test/integration/large-payloads.test.ts.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createClient,
  isUploadRef,
  NotFound,
  OrreryNetworkError,
  UploadFailed,
  UploadUrlExpired,
  uploadRef,
} from '../../shared/client';
import { MAX_INLINE_BODY_BYTES } from '../../shared/core/blobs';

interface Received {
  method: string;
  path: string;
  rawUrl: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

type Reply = { status?: number; headers?: Record<string, string>; body?: string } | 'destroy';

interface Peer {
  url: string;
  requests: Received[];
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

const REF = `u/${'ab'.repeat(16)}`;
const SECRET = 'X-Amz-Signature=deadbeef';

/**
 * A peer: `POST /uploads` answers a ticket whose URL is the peer's `/bucket/<ref>` (with a
 * signature-like query), a PUT there answers `put(index)`, `POST /jobs` answers 201 with the body.
 */
async function startPeer(
  options: { put?: (index: number) => Reply; uploads?: () => Reply; maxBytes?: number; expiresAt?: string } = {},
): Promise<Peer> {
  const requests: Received[] = [];
  let puts = 0;
  let url = '';
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const received: Received = {
        method: req.method ?? '',
        path: new URL(req.url ?? '/', 'http://peer').pathname,
        rawUrl: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks),
      };
      requests.push(received);
      let answer: Reply;
      if (received.method === 'POST' && received.path === '/uploads') {
        answer = options.uploads?.() ?? {
          status: 201,
          body: JSON.stringify({
            ref: REF,
            url: `${url}/bucket/${REF}?X-Amz-Expires=900&${SECRET}`,
            method: 'PUT',
            headers: { 'content-type': 'application/json' },
            expiresAt: options.expiresAt ?? new Date(Date.now() + 900_000).toISOString(),
            maxBytes: options.maxBytes ?? 16 * 1024 * 1024,
          }),
        };
      } else if (received.method === 'PUT' && received.path.startsWith('/bucket/')) {
        answer = options.put?.(puts++) ?? { status: 200 };
      } else if (received.method === 'POST' && received.path === '/jobs/batch') {
        answer = { status: 200, body: JSON.stringify({ results: [] }) };
      } else if (received.method === 'POST' && received.path === '/flows') {
        answer = { status: 201, body: JSON.stringify({ id: 'flow-1', jobs: [] }) };
      } else if (received.method === 'POST' && received.path === '/jobs') {
        const request = JSON.parse(received.body.toString('utf8'));
        answer = {
          status: 201,
          body: JSON.stringify({ id: request.id, type: request.type, state: 'queued', payload: {} }),
        };
      } else {
        answer = { status: 404, body: JSON.stringify({ error: { code: 'route_not_found', message: 'no route' } }) };
      }
      if (answer === 'destroy') return req.socket.destroy();
      res.writeHead(answer.status ?? 200, { 'content-type': 'application/json', ...answer.headers });
      res.end(answer.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  closers.push(
    () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url, requests };
}

/** A client whose signer marks what it signed, so an unsigned PUT shows. */
function clientOf(peer: Peer) {
  return createClient({
    url: peer.url,
    sign: async ({ headers }) => ({ ...headers, authorization: 'signed-by-client' }),
    retry: { retries: 2, baseDelayMs: 1, maxDelayMs: 5 },
  });
}

const s3Error = (code: string, message: string) =>
  `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message><RequestId>R1</RequestId></Error>`;

describe('client.upload', () => {
  it('asks POST /uploads (signed), then PUTs the JSON to the URL with its headers, unsigned', async () => {
    const peer = await startPeer();
    const payload = { rows: ['a', 'b'], note: 'é' };
    const upload = await clientOf(peer).upload(payload);
    expect(upload).toMatchObject({ ref: REF, bytes: Buffer.byteLength(JSON.stringify(payload)) });
    expect(isUploadRef(upload)).toBe(true);
    expect(Date.parse(upload.expiresAt)).toBeGreaterThan(Date.now());
    const [ask, put] = peer.requests;
    expect(ask).toMatchObject({ method: 'POST', path: '/uploads' });
    expect(ask?.headers.authorization).toBe('signed-by-client');
    expect(put).toMatchObject({ method: 'PUT', path: `/bucket/${REF}` });
    expect(put?.rawUrl).toContain(SECRET);
    expect(put?.headers['content-type']).toBe('application/json');
    expect(put?.headers.authorization).toBeUndefined();
    expect(JSON.parse(put?.body.toString('utf8') ?? '')).toEqual(payload);
  });

  it('sends text and bytes as they are', async () => {
    const peer = await startPeer();
    const client = clientOf(peer);
    const text = '{ "a" : 1 }\n';
    expect((await client.upload(text)).bytes).toBe(text.length);
    const bytes = new TextEncoder().encode('{"b":"ü"}');
    expect((await client.upload(bytes)).bytes).toBe(bytes.byteLength);
    const puts = peer.requests.filter((r) => r.method === 'PUT');
    expect(puts.map((r) => r.body.toString('utf8'))).toEqual([text, '{"b":"ü"}']);
  });

  it('refuses a body over the upload’s maxBytes without sending it', async () => {
    const peer = await startPeer({ maxBytes: 10 });
    const error = await clientOf(peer)
      .upload({ more: 'than ten bytes' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UploadFailed);
    expect(error).toMatchObject({ ref: REF, status: 0, attempts: 0 });
    expect((error as Error).message).toMatch(/at most 10/);
    expect(peer.requests.filter((r) => r.method === 'PUT')).toEqual([]);
  });

  it('names an expired URL (S3 403 "Request has expired") as UploadUrlExpired, without the signature', async () => {
    const expiresAt = new Date(Date.now() + 900_000).toISOString();
    const peer = await startPeer({
      expiresAt,
      put: () => ({
        status: 403,
        headers: { 'content-type': 'application/xml' },
        body: s3Error('AccessDenied', 'Request has expired'),
      }),
    });
    const error = await clientOf(peer)
      .upload({ a: 1 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UploadUrlExpired);
    expect(error).toBeInstanceOf(UploadFailed);
    expect(error).toMatchObject({ ref: REF, status: 403, s3Code: 'AccessDenied', expiresAt, attempts: 1 });
    expect((error as Error).message).not.toContain('deadbeef');
    expect(peer.requests.filter((r) => r.method === 'PUT')).toHaveLength(1);
  });

  it('reports another S3 refusal as UploadFailed with its code, not retried', async () => {
    const peer = await startPeer({
      put: () => ({
        status: 403,
        body: s3Error('SignatureDoesNotMatch', 'The request signature we calculated does not match'),
      }),
    });
    const error = await clientOf(peer)
      .upload({ a: 1 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UploadFailed);
    expect(error).not.toBeInstanceOf(UploadUrlExpired);
    expect(error).toMatchObject({ status: 403, s3Code: 'SignatureDoesNotMatch', attempts: 1 });
    expect((error as Error).message).toContain(`${REF}`);
    expect((error as Error).message).not.toContain('deadbeef');
    expect(peer.requests.filter((r) => r.method === 'PUT')).toHaveLength(1);
  });

  it('retries S3 503 SlowDown and a dropped connection, then succeeds', async () => {
    const peer = await startPeer({
      put: (i) =>
        i === 0
          ? { status: 503, body: s3Error('SlowDown', 'Please reduce your request rate.') }
          : i === 1
            ? 'destroy'
            : { status: 200 },
    });
    const upload = await clientOf(peer).upload({ a: 1 });
    expect(upload.ref).toBe(REF);
    expect(peer.requests.filter((r) => r.method === 'PUT')).toHaveLength(3);
  });

  it('gives up after the retries with a network error that does not show the signature', async () => {
    const peer = await startPeer({ put: () => 'destroy' });
    const error = await clientOf(peer)
      .upload({ a: 1 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OrreryNetworkError);
    expect((error as OrreryNetworkError).url).toBe(`${peer.url}/bucket/${REF}`);
    expect((error as Error).message).not.toContain('deadbeef');
    expect(peer.requests.filter((r) => r.method === 'PUT')).toHaveLength(3);
  });

  it('passes on the API’s refusal of POST /uploads (no payload bucket: 404 not_configured)', async () => {
    const peer = await startPeer({
      uploads: () => ({
        status: 404,
        body: JSON.stringify({ error: { code: 'not_configured', message: 'this deployment has no payload bucket' } }),
      }),
    });
    const error = await clientOf(peer)
      .upload({ a: 1 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFound);
    expect(error).toMatchObject({ code: 'not_configured' });
  });
});

describe('enqueue and large payloads', () => {
  /** A payload whose enqueue body is just over the inline limit. */
  const large = () => ({ blob: 'x'.repeat(MAX_INLINE_BODY_BYTES) });

  it('sends a payload within the limit inline, with no upload', async () => {
    const peer = await startPeer();
    const { job, upload } = await clientOf(peer).enqueue('echo', { blob: 'x'.repeat(1000) });
    expect(upload).toBeUndefined();
    expect(peer.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /jobs']);
    const sent = JSON.parse(peer.requests[0]?.body.toString('utf8') ?? '');
    expect(sent).toMatchObject({ type: 'echo', id: job.id, payload: { blob: 'x'.repeat(1000) } });
    expect(sent).not.toHaveProperty('payloadRef');
    expect(sent).not.toHaveProperty('autoUpload');
  });

  it('uploads a payload over the limit, then enqueues it by reference under the id fixed first', async () => {
    const peer = await startPeer();
    const payload = large();
    const { job, upload } = await clientOf(peer).enqueue('echo', payload, { id: 'big-1', maxAttempts: 2 });
    expect(upload).toMatchObject({ ref: REF, bytes: JSON.stringify(payload).length });
    expect(job.id).toBe('big-1');
    expect(peer.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /uploads',
      `PUT /bucket/${REF}`,
      'POST /jobs',
    ]);
    expect(peer.requests[1]?.body.toString('utf8')).toBe(JSON.stringify(payload));
    const sent = JSON.parse(peer.requests[2]?.body.toString('utf8') ?? '');
    expect(sent).toEqual({ type: 'echo', payloadRef: REF, id: 'big-1', maxAttempts: 2 });
  });

  it('counts UTF-8 bytes, not characters: 2.2 M three-byte characters are uploaded', async () => {
    const peer = await startPeer();
    const chars = Math.ceil(MAX_INLINE_BODY_BYTES / 3) + 1000; // under the limit in characters, over it in bytes
    const { upload } = await clientOf(peer).enqueue('echo', { text: '€'.repeat(chars) });
    expect(upload?.bytes).toBeGreaterThan(MAX_INLINE_BODY_BYTES);
    expect(peer.requests[0]?.path).toBe('/uploads');
  });

  it('sends it inline anyway with autoUpload: false (the API answers for its size)', async () => {
    const peer = await startPeer();
    const { upload } = await clientOf(peer).enqueue('echo', large(), { autoUpload: false });
    expect(upload).toBeUndefined();
    expect(peer.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /jobs']);
    expect(peer.requests[0]?.body.byteLength).toBeGreaterThan(MAX_INLINE_BODY_BYTES);
  });

  it('enqueues an upload made earlier, or a reference given by uploadRef, as payloadRef', async () => {
    const peer = await startPeer();
    const client = clientOf(peer);
    const upload = await client.upload({ a: 1 });
    await client.enqueue('echo', upload, { id: 'by-upload' });
    await client.enqueue('echo', uploadRef(REF), { id: 'by-ref' });
    const jobs = peer.requests.filter((r) => r.path === '/jobs').map((r) => JSON.parse(r.body.toString('utf8')));
    expect(jobs).toEqual([
      { type: 'echo', payloadRef: REF, id: 'by-upload' },
      { type: 'echo', payloadRef: REF, id: 'by-ref' },
    ]);
    // a batch item and a flow job take one too (a batch uploads nothing by itself)
    await client.enqueueBatch([
      { type: 'echo', payload: upload, id: 'batch-a' },
      { type: 'echo', payload: { small: true }, id: 'batch-b' },
    ]);
    await client.createFlow([{ type: 'echo', payload: upload, id: 'flow-a' }], { id: 'flow-1' });
    const batch = JSON.parse(peer.requests.find((r) => r.path === '/jobs/batch')?.body.toString('utf8') ?? '');
    expect(batch.jobs).toEqual([
      { type: 'echo', payloadRef: REF, id: 'batch-a' },
      { type: 'echo', payload: { small: true }, id: 'batch-b' },
    ]);
    const flow = JSON.parse(peer.requests.find((r) => r.path === '/flows')?.body.toString('utf8') ?? '');
    expect(flow.jobs).toEqual([{ type: 'echo', payloadRef: REF, id: 'flow-a' }]);
    // a payload that merely looks like a reference is a payload
    await client.enqueue('echo', { ref: REF }, { id: 'look-alike' });
    const last = JSON.parse(peer.requests.at(-1)?.body.toString('utf8') ?? '');
    expect(last).toEqual({ type: 'echo', payload: { ref: REF }, id: 'look-alike' });
  });
});
