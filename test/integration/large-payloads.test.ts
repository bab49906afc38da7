/**
 * Large payloads and results end to end on local AWS (DynamoDB Local, fauxqs for SQS and S3 on
 * loopback): through the real API handler behind a Function URL-shaped server and the real worker.
 * - a 5 MB payload sent inline is kept in the payload bucket, and the handler gets it whole;
 * - a 10 MB payload goes through `POST /uploads` (a presigned PUT), then `payloadRef`;
 * - an 8 MB step result is offloaded, and the replay after a sleep reads it back without running
 *   the step again; a 200 KB handler result is offloaded too;
 * - a bad reference is a 400 naming `payloadRef`, and nothing is written;
 * - the client (`orrery-jobs`) uploads a 7 MB payload by itself and enqueues it by reference, and
 *   `client.upload` makes an upload to enqueue with later.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { main } from '../../shared/cli/main';
import { createClient, UploadFailed } from '../../shared/client';
import { isBlobRef, MAX_BLOB_BYTES } from '../../shared/core/blobs';
import { defineJobType } from '../../shared/core/job-type';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';
import { until } from '../support/local-api';

const MB = 1_000_000;

const bigSpec = defineJobType({
  type: 'big',
  payload: z.object({ blob: z.string(), n: z.number() }),
  timeoutMs: 30_000,
  retry: { maxAttempts: 1 },
});

const stepSpec = defineJobType({
  type: 'big-step',
  payload: z.object({ size: z.number() }),
  timeoutMs: 30_000,
  retry: { maxAttempts: 1 },
});

const waitSpec = defineJobType({
  type: 'big-signal',
  payload: z.object({}),
  timeoutMs: 30_000,
  retry: { maxAttempts: 1 },
});

const childSpec = defineJobType({
  type: 'big-child',
  payload: z.object({}),
  timeoutMs: 30_000,
  retry: { maxAttempts: 1 },
});

/** What the handlers saw, by job id. */
const seen = new Map<string, { length: number; n: number; head: string }>();
let makeRuns = 0;
const stepSeen: { length: number; attempt: number }[] = [];

let aws: LocalAws;
let platform: LocalPlatform;

beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
  platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('payloads'),
    jobs: [
      {
        spec: bigSpec,
        run: async (payload, ctx) => {
          const p = payload as { blob: string; n: number };
          seen.set(ctx.jobId, { length: p.blob.length, n: p.n, head: p.blob.slice(0, 8) });
          // a result over the 64 KiB inline limit: offloaded as well
          return { echoed: p.blob.slice(0, 200 * 1024), n: p.n };
        },
      },
      {
        spec: stepSpec,
        run: async (payload, ctx) => {
          const { size } = payload as { size: number };
          const made = await ctx.step('make', () => {
            makeRuns += 1;
            return { data: 's'.repeat(size) };
          });
          // suspends the attempt: the next one replays 'make' from its recorded (offloaded) result
          await ctx.sleep('pause', '2s');
          stepSeen.push({ length: made.data.length, attempt: ctx.attempt });
          return { length: made.data.length };
        },
      },
      {
        spec: childSpec,
        run: async (_payload, ctx) => {
          const parents = await ctx.parents();
          return Object.fromEntries(
            Object.entries(parents).map(([id, p]) => [id, (p.result as { echoed: string }).echoed.length]),
          );
        },
      },
      {
        spec: waitSpec,
        run: async (_payload, ctx) => {
          const got = await ctx.waitForSignal<{ data: string }>('doc', { timeout: '1m' });
          return { length: got?.data.length ?? -1 };
        },
      },
    ],
  });
});

afterAll(async () => {
  await platform?.stop();
  await aws?.stop();
});

// biome-ignore lint/suspicious/noExplicitAny: the API's JSON answers, read field by field
type Json = any;

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const response = await fetch(`${platform.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

async function finished(id: string): Promise<Json> {
  let job: Json;
  await until(async () => {
    job = (await call('GET', `/jobs/${id}`)).body;
    return ['succeeded', 'failed'].includes(job?.state);
  }, 60_000);
  return job;
}

/** An output for the CLI's `main`, keeping what it was given. */
function capture() {
  const output = {
    text: '',
    write(chunk: string) {
      output.text += chunk;
      return true;
    },
  };
  return output;
}

/** A payload whose JSON is about `bytes` long. */
const payloadOf = (bytes: number, n: number) => ({ blob: `${n}`.padEnd(8, '-') + 'p'.repeat(bytes - 40), n });

describe('large payloads on local AWS (fauxqs S3)', () => {
  it('takes a 5 MB payload inline: the item keeps a reference, the handler gets the payload whole', async () => {
    const payload = payloadOf(5 * MB, 5);
    const id = `inline-${Date.now()}`;
    const created = await call('POST', '/jobs', { type: 'big', id, payload });
    expect(created.status).toBe(201);
    expect(isBlobRef(created.body.payload)).toBe(true);
    expect(created.body.payload.bytes).toBe(JSON.stringify(payload).length);
    const job = await finished(id);
    expect(job.state).toBe('succeeded');
    expect(seen.get(id)).toEqual({ length: payload.blob.length, n: 5, head: payload.blob.slice(0, 8) });
    // the 200 KB result is kept in the bucket too
    expect(isBlobRef(job.result)).toBe(true);
    expect(job.result.bytes).toBeGreaterThan(200 * 1024);
  });

  it('takes a 10 MB payload through an upload: POST /uploads, PUT to its URL, enqueue with payloadRef', async () => {
    const upload = await call('POST', '/uploads');
    expect(upload.status).toBe(201);
    expect(upload.body).toMatchObject({ method: 'PUT', ref: expect.stringMatching(/^u\/[0-9a-f]{32}$/) });
    expect(Date.parse(upload.body.expiresAt)).toBeGreaterThan(Date.now());
    const payload = payloadOf(10 * MB, 10);
    const put = await fetch(upload.body.url, {
      method: 'PUT',
      headers: upload.body.headers,
      body: JSON.stringify(payload),
    });
    expect(put.ok).toBe(true);
    const id = `upload-${Date.now()}`;
    const created = await call('POST', '/jobs', { type: 'big', id, payloadRef: upload.body.ref });
    expect(created.status).toBe(201);
    // a copy of its own under p/ (one PUT by the API), never the upload: its URL could PUT it again
    expect(created.body.payload).toEqual({
      $orreryBlob: 1,
      key: expect.stringMatching(new RegExp(`^p/${id}/`)),
      bytes: JSON.stringify(payload).length,
    });
    const job = await finished(id);
    expect(job.state).toBe('succeeded');
    expect(seen.get(id)?.length).toBe(payload.blob.length);
  });

  it('validates an uploaded payload against the type schema, and refuses bad references with 400 and nothing written', async () => {
    const schemaless = await call('POST', '/uploads');
    await fetch(schemaless.body.url, { method: 'PUT', body: JSON.stringify({ blob: 42 }) });
    const notObject = await call('POST', '/uploads');
    await fetch(notObject.body.url, { method: 'PUT', body: '[1,2,3]' });
    const never = await call('POST', '/uploads'); // signed, never PUT
    const cases: { body: Record<string, unknown>; code: string; path: string }[] = [
      { body: { payloadRef: schemaless.body.ref }, code: 'invalid_payload', path: 'payload.blob' },
      { body: { payloadRef: notObject.body.ref }, code: 'invalid_payload_ref', path: 'payloadRef' },
      { body: { payloadRef: never.body.ref }, code: 'payload_ref_not_found', path: 'payloadRef' },
      { body: { payloadRef: `u/${'0'.repeat(32)}` }, code: 'payload_ref_not_found', path: 'payloadRef' },
      { body: { payloadRef: 'p/someone-else/job' }, code: 'invalid_payload_ref', path: 'payloadRef' },
      { body: { payloadRef: 42 }, code: 'invalid_payload_ref', path: 'payloadRef' },
      {
        body: { payloadRef: schemaless.body.ref, payload: { blob: 'x', n: 1 } },
        code: 'invalid_payload_ref',
        path: 'payloadRef',
      },
    ];
    for (const [i, c] of cases.entries()) {
      const id = `bad-ref-${i}-${Date.now()}`;
      const answer = await call('POST', '/jobs', { type: 'big', id, ...c.body });
      expect({ i, status: answer.status, code: answer.body.error.code }).toEqual({ i, status: 400, code: c.code });
      expect(answer.body.error.issues.map((issue: { path: string }) => issue.path)).toContain(c.path);
      expect((await call('GET', `/jobs/${id}`)).status).toBe(404);
    }
    // a batch item names its own index
    const batch = await call('POST', '/jobs/batch', {
      jobs: [{ type: 'big', payloadRef: never.body.ref }],
    });
    expect(batch.status).toBe(200);
    expect(batch.body.results[0]).toMatchObject({ status: 'error', error: { code: 'payload_ref_not_found' } });
  });

  it('keeps an 8 MB step result in the bucket: the replay after a sleep reads it back, the step runs once', async () => {
    const id = `step-${Date.now()}`;
    const created = await call('POST', '/jobs', { type: 'big-step', id, payload: { size: 8 * MB } });
    expect(created.status).toBe(201);
    const job = await finished(id);
    expect(job.state).toBe('succeeded');
    expect(job.result).toEqual({ length: 8 * MB });
    expect(makeRuns).toBe(1);
    expect(stepSeen).toEqual([{ length: 8 * MB, attempt: expect.any(Number) }]);
  });

  it('delivers a 3 MB signal payload: the inbox keeps a reference, the waiting handler gets the payload', async () => {
    const id = `signal-${Date.now()}`;
    expect((await call('POST', '/jobs', { type: 'big-signal', id, payload: {} })).status).toBe(201);
    await until(async () => (await call('GET', `/jobs/${id}`)).body?.state === 'waiting', 30_000);
    const sent = await call('POST', `/jobs/${id}/signals/doc`, { payload: { data: 'g'.repeat(3 * MB) } });
    expect(sent.status).toBe(202);
    const job = await finished(id);
    expect(job.state).toBe('succeeded');
    expect(job.result).toEqual({ length: 3 * MB });
  });

  it("gives ctx.parents() a parent's offloaded result as its value", async () => {
    const parent = `parent-${Date.now()}`;
    const child = `child-${Date.now()}`;
    expect((await call('POST', '/jobs', { type: 'big', id: parent, payload: payloadOf(300_000, 3) })).status).toBe(201);
    expect(
      (await call('POST', '/jobs', { type: 'big-child', id: child, payload: {}, dependsOn: [parent] })).status,
    ).toBe(201);
    const done = await finished(child);
    expect(isBlobRef((await call('GET', `/jobs/${parent}`)).body.result)).toBe(true);
    expect(done.state).toBe('succeeded');
    expect(done.result).toEqual({ [parent]: 200 * 1024 });
  });
});

describe('the client and large payloads on local AWS', () => {
  it('uploads a 7 MB payload by itself, enqueues it by reference, and the handler gets it whole', async () => {
    const client = createClient({ url: platform.url });
    const payload = payloadOf(7 * MB, 7);
    const id = `client-auto-${Date.now()}`;
    const { created, job, upload } = await client.enqueue('big', payload, { id });
    expect(created).toBe(true);
    expect(upload).toMatchObject({
      ref: expect.stringMatching(/^u\/[0-9a-f]{32}$/),
      bytes: JSON.stringify(payload).length,
    });
    // the API kept a copy of its own under p/, never the upload
    expect(job.payload).toEqual({
      $orreryBlob: 1,
      key: expect.stringMatching(new RegExp(`^p/${id}/`)),
      bytes: upload?.bytes,
    });
    const done = await client.waitFor(id, 'succeeded', { timeout: 60_000, interval: 200 });
    expect(done.state).toBe('succeeded');
    expect(seen.get(id)).toEqual({ length: payload.blob.length, n: 7, head: payload.blob.slice(0, 8) });
    // enqueued again with the same id and payload: the same job, found by the payload's hash
    const again = await client.enqueue('big', payload, { id });
    expect(again.created).toBe(false);
    expect(again.job.id).toBe(id);
  });

  it('makes an upload with client.upload (bytes as read from a file) to enqueue twice later', async () => {
    const client = createClient({ url: platform.url });
    const payload = payloadOf(2 * MB, 4);
    const upload = await client.upload(new TextEncoder().encode(JSON.stringify(payload)));
    const ids = [`client-ref-a-${Date.now()}`, `client-ref-b-${Date.now()}`];
    for (const id of ids) expect((await client.enqueue('big', upload, { id })).created).toBe(true);
    for (const id of ids) {
      await client.waitFor(id, 'succeeded', { timeout: 60_000, interval: 200 });
      expect(seen.get(id)).toEqual({ length: payload.blob.length, n: 4, head: payload.blob.slice(0, 8) });
    }
  });

  it('orrery enqueue --payload-file uploads a 7 MB file, and orrery upload + --payload-ref enqueue one', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'orrery-large-'));
    const file = join(cwd, 'big.json');
    const payload = payloadOf(7 * MB, 8);
    writeFileSync(file, JSON.stringify(payload));
    const cli = async (argv: string[]) => {
      const [out, err] = [capture(), capture()];
      const code = await main(argv, {
        stdout: out,
        stderr: err,
        env: { ORRERY_URL: platform.url },
        cwd,
        readStdin: async () => '',
      });
      return { code, stdout: out.text, stderr: err.text };
    };
    const auto = `cli-auto-${Date.now()}`;
    const enqueued = await cli(['enqueue', 'big', '--payload-file', 'big.json', '--id', auto]);
    expect({ code: enqueued.code, stderr: enqueued.stderr }).toEqual({ code: 0, stderr: '' });
    expect(enqueued.stdout).toMatch(/payload uploaded first \(\d+ bytes, u\/[0-9a-f]{32}\)/);
    const uploaded = await cli(['upload', 'big.json']);
    expect(uploaded.code).toBe(0);
    const ref = uploaded.stdout.trim();
    expect(ref).toMatch(/^u\/[0-9a-f]{32}$/);
    const byRef = `cli-ref-${Date.now()}`;
    expect((await cli(['enqueue', 'big', '--payload-ref', ref, '--id', byRef, '-q'])).stdout).toBe(`${byRef}\n`);
    for (const id of [auto, byRef]) {
      const job = await finished(id);
      expect(job.state).toBe('succeeded');
      expect(seen.get(id)).toEqual({ length: payload.blob.length, n: 8, head: payload.blob.slice(0, 8) });
    }
  });

  it('refuses a body over the bucket limit before sending it', async () => {
    const client = createClient({ url: platform.url });
    const error = await client.upload(new Uint8Array(MAX_BLOB_BYTES + 1)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UploadFailed);
    expect(error).toMatchObject({ status: 0, attempts: 0 });
  });
});

describe('references a caller cannot name', () => {
  it("refuses a flow job whose payloadRef names another job's object (400, nothing written)", async () => {
    const victim = `victim-${Date.now()}`;
    const created = await call('POST', '/jobs', { type: 'big', id: victim, payload: payloadOf(300_000, 9) });
    expect(created.status).toBe(201);
    const victimKey: string = created.body.payload.key; // shown by the API to anyone who reads the job
    expect(victimKey.startsWith('p/')).toBe(true);
    const thief = `thief-${Date.now()}`;
    const flow = await call('POST', '/flows', {
      jobs: [{ type: 'big', id: thief, payload: { blob: 'x', n: 0 }, payloadRef: victimKey }],
    });
    expect({ status: flow.status, code: flow.body?.error?.code }).toEqual({ status: 400, code: 'invalid_payload_ref' });
    expect(flow.body.error.issues.map((issue: { path: string }) => issue.path)).toContain('jobs.0.payloadRef');
    expect((await call('GET', `/jobs/${thief}`)).status).toBe(404);
  });

  it('runs a job with the upload it was enqueued with, even when the URL is used again before it runs', async () => {
    const upload = await call('POST', '/uploads');
    const put = (payload: unknown) =>
      fetch(upload.body.url, { method: 'PUT', headers: upload.body.headers, body: JSON.stringify(payload) });
    expect((await put(payloadOf(1000, 1))).ok).toBe(true);
    const id = `reput-${Date.now()}`;
    const created = await call('POST', '/jobs', { type: 'big', id, payloadRef: upload.body.ref, delaySeconds: 2 });
    expect(created.status).toBe(201);
    // the presigned URL is still valid: the same caller PUTs another payload under the checked key
    expect((await put(payloadOf(2000, 2))).ok).toBe(true);
    const job = await finished(id);
    expect(job.state).toBe('succeeded');
    expect(seen.get(id)).toMatchObject({ n: 1 });
  });
});
