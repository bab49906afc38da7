/**
 * `orrery upload` and `orrery enqueue --payload-file / --payload-ref` in-process (`main(argv, io)`),
 * against a real HTTP peer on 127.0.0.1 playing the API (`POST /uploads`, `POST /jobs`) and S3
 * (the presigned PUT). End to end on local AWS: test/integration/large-payloads.test.ts.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type CliIo, main } from '../../shared/cli/main';
import { MAX_BLOB_BYTES, MAX_INLINE_BODY_BYTES } from '../../shared/core/blobs';

const REF = `u/${'cd'.repeat(16)}`;

interface Received {
  method: string;
  path: string;
  body: Buffer;
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** `refuse`: S3 answers the PUT 403 `AccessDenied` "Request has expired". */
async function startPeer(refuse = false): Promise<{ url: string; requests: Received[] }> {
  const requests: Received[] = [];
  let url = '';
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const received = {
        method: req.method ?? '',
        path: new URL(req.url ?? '/', 'http://peer').pathname,
        body: Buffer.concat(chunks),
      };
      requests.push(received);
      res.setHeader('content-type', 'application/json');
      if (received.method === 'POST' && received.path === '/uploads') {
        res.writeHead(201);
        res.end(
          JSON.stringify({
            ref: REF,
            url: `${url}/bucket/${REF}?X-Amz-Signature=abc`,
            method: 'PUT',
            headers: { 'content-type': 'application/json' },
            expiresAt: '2026-11-22T10:15:00.000Z',
            maxBytes: MAX_BLOB_BYTES,
          }),
        );
      } else if (received.method === 'PUT') {
        res.writeHead(refuse ? 403 : 200, { 'content-type': 'application/xml' });
        res.end(refuse ? '<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>' : '');
      } else if (received.method === 'POST' && received.path === '/jobs') {
        const request = JSON.parse(received.body.toString('utf8'));
        res.writeHead(201);
        res.end(
          JSON.stringify({
            id: request.id,
            type: request.type,
            state: 'queued',
            payload: request.payloadRef ? { $orreryBlob: 1, key: `p/${request.id}/x`, bytes: 1 } : request.payload,
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
          }),
        );
      } else {
        res.writeHead(404);
        res.end(JSON.stringify({ error: { code: 'route_not_found', message: 'no route' } }));
      }
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

async function run(argv: string[], url: string, cwd: string, stdin = '') {
  const capture = () => {
    const output = {
      text: '',
      isTTY: false,
      columns: 200,
      write(chunk: string) {
        output.text += chunk;
        return true;
      },
    };
    return output;
  };
  const [out, err] = [capture(), capture()];
  const io: CliIo = {
    stdout: out,
    stderr: err,
    env: { ORRERY_URL: url },
    cwd,
    readStdin: async () => stdin,
    now: () => Date.parse('2026-11-22T10:00:10.000Z'),
    sleep: async () => {},
  };
  const code = await main(argv, io);
  return { code, stdout: out.text, stderr: err.text };
}

const workdir = () => mkdtempSync(join(tmpdir(), 'orrery-cli-upload-'));
const calls = (requests: Received[]) => requests.map((r) => `${r.method} ${r.path}`);

describe('orrery upload', () => {
  it('PUTs the file as it is and prints only the reference (--json: ref, bytes, expiresAt)', async () => {
    const peer = await startPeer();
    const cwd = workdir();
    const text = '{\n  "rows": [1, 2, 3]\n}\n';
    writeFileSync(join(cwd, 'rows.json'), text);
    const plain = await run(['upload', 'rows.json'], peer.url, cwd);
    expect(plain).toMatchObject({ code: 0, stdout: `${REF}\n`, stderr: '' });
    expect(calls(peer.requests)).toEqual(['POST /uploads', `PUT /bucket/${REF}`]);
    expect(peer.requests[1]?.body.toString('utf8')).toBe(text);
    const json = await run(['upload', 'rows.json', '--json'], peer.url, cwd);
    expect(JSON.parse(json.stdout)).toEqual({ ref: REF, bytes: text.length, expiresAt: '2026-11-22T10:15:00.000Z' });
    const stdin = await run(['upload', '-'], peer.url, cwd, '{"a":1}');
    expect(stdin.stdout).toBe(`${REF}\n`);
    expect(peer.requests.at(-1)?.body.toString('utf8')).toBe('{"a":1}');
  });

  it('refuses a file that cannot be a payload before any request (exit 2)', async () => {
    const peer = await startPeer();
    const cwd = workdir();
    writeFileSync(join(cwd, 'bad.json'), '{ "a": ');
    writeFileSync(join(cwd, 'list.json'), '[1, 2]');
    const cases: [string[], RegExp][] = [
      [['upload', 'bad.json'], /bad\.json is not valid JSON/],
      [['upload', 'list.json'], /list\.json must be a JSON object/],
      [['upload', 'missing.json'], /cannot read missing\.json/],
    ];
    for (const [argv, message] of cases) {
      const result = await run(argv, peer.url, cwd);
      expect({ argv, code: result.code }).toEqual({ argv, code: 2 });
      expect(result.stderr).toMatch(message);
    }
    expect(peer.requests).toEqual([]);
  });
});

describe('an upload S3 refuses', () => {
  it('exits 1 naming the upload and why, as text or as JSON, and enqueues nothing', async () => {
    const peer = await startPeer(true);
    const cwd = workdir();
    writeFileSync(join(cwd, 'p.json'), '{"a":1}');
    const text = await run(['upload', 'p.json'], peer.url, cwd);
    expect({ code: text.code, stdout: text.stdout }).toEqual({ code: 1, stdout: '' });
    expect(text.stderr).toContain(`error: upload_url_expired: the presigned URL of upload ${REF} had expired`);
    expect(text.stderr).not.toContain('X-Amz-Signature');
    const json = await run(['upload', 'p.json', '--json'], peer.url, cwd);
    expect(JSON.parse(json.stderr)).toMatchObject({
      error: { code: 'upload_url_expired', ref: REF, status: 403, s3Code: 'AccessDenied' },
    });
    writeFileSync(join(cwd, 'big.json'), JSON.stringify({ blob: 'z'.repeat(MAX_INLINE_BODY_BYTES) }));
    const enqueued = await run(['enqueue', 'big', '--payload-file', 'big.json'], peer.url, cwd);
    expect(enqueued.code).toBe(1);
    expect(calls(peer.requests).filter((c) => c === 'POST /jobs')).toEqual([]);
  });
});

describe('orrery enqueue with a large payload', () => {
  it('sends a --payload-file within the inline limit in the request', async () => {
    const peer = await startPeer();
    const cwd = workdir();
    writeFileSync(join(cwd, 'p.json'), JSON.stringify({ blob: 'x'.repeat(100_000) }));
    const result = await run(['enqueue', 'big', '--payload-file', 'p.json', '--id', 'small-1'], peer.url, cwd);
    expect(result.code).toBe(0);
    expect(calls(peer.requests)).toEqual(['POST /jobs']);
    expect(JSON.parse(peer.requests[0]?.body.toString('utf8') ?? '')).toMatchObject({
      id: 'small-1',
      payload: { blob: 'x'.repeat(100_000) },
    });
    expect(result.stdout).not.toContain('uploaded');
  });

  it('uploads a --payload-file over the inline limit, then enqueues it by reference', async () => {
    const peer = await startPeer();
    const cwd = workdir();
    const payload = { blob: 'y'.repeat(MAX_INLINE_BODY_BYTES + 1000) };
    writeFileSync(join(cwd, 'big.json'), JSON.stringify(payload));
    const result = await run(['enqueue', 'big', '--payload-file', 'big.json', '--id', 'big-1'], peer.url, cwd);
    expect(result.code).toBe(0);
    expect(calls(peer.requests)).toEqual(['POST /uploads', `PUT /bucket/${REF}`, 'POST /jobs']);
    expect(peer.requests[1]?.body.byteLength).toBe(JSON.stringify(payload).length);
    expect(JSON.parse(peer.requests[2]?.body.toString('utf8') ?? '')).toEqual({
      type: 'big',
      payloadRef: REF,
      id: 'big-1',
    });
    expect(result.stdout).toContain(`payload uploaded first (${JSON.stringify(payload).length} bytes, ${REF})`);
    const quiet = await run(['enqueue', 'big', '--payload-file', 'big.json', '--id', 'big-2', '-q'], peer.url, cwd);
    expect(quiet.stdout).toBe('big-2\n');
  });

  it('enqueues an upload with --payload-ref, and refuses it beside --payload or --payload-file', async () => {
    const peer = await startPeer();
    const cwd = workdir();
    const result = await run(['enqueue', 'big', '--payload-ref', REF, '--id', 'ref-1'], peer.url, cwd);
    expect(result.code).toBe(0);
    expect(JSON.parse(peer.requests[0]?.body.toString('utf8') ?? '')).toEqual({
      type: 'big',
      payloadRef: REF,
      id: 'ref-1',
    });
    for (const other of [
      ['--payload', '{}'],
      ['--payload-file', 'p.json'],
    ]) {
      const refused = await run(['enqueue', 'big', '--payload-ref', REF, ...other], peer.url, cwd);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/give --payload-ref, or --payload or --payload-file, not both/);
    }
    expect(peer.requests).toHaveLength(1);
  });
});
