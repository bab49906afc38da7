/**
 * The server behind `orrery dev`: jobs enqueued through the dashboard's API (`/api/…` on the same
 * port), and a reload of the definitions while one job runs and another waits for a signal. The
 * running attempt finishes on the code it started with, the waiting job resumes on the new code,
 * and a job enqueued after the reload runs the new code: nothing in flight is lost or run twice.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import * as z from 'zod/mini';
import { sigV4Signer } from '../../shared/client/signing';
import { defineJob, defineJobType } from '../../shared/entries/runtime';
import { buildUi } from '../../ui/build';
import { assumedRole, localRoleId, startLocalAws } from '../local-aws';
import { type DevServer, startDevServer } from '../local-aws/dev-server';
import type { LocalAws } from '../local-aws/index';

const slowJob = defineJobType({ type: 'slow', payload: z.object({ ms: z.number() }), timeoutMs: 10_000 });
const gateJob = defineJobType({
  type: 'gate',
  payload: z.object({}),
  signals: { open: z.object({ by: z.string() }) },
  timeoutMs: 10_000,
});

let runs: { type: string; version: number }[] = [];

/** The app's handlers as of `version`: each result names the version that produced it. */
function definitions(version: number) {
  const slow = defineJob(slowJob, async ({ ms }) => {
    runs.push({ type: 'slow', version });
    await new Promise((resolve) => setTimeout(resolve, ms));
    return { version };
  });
  const gate = defineJob(gateJob, async (_payload, ctx) => {
    runs.push({ type: 'gate', version });
    const opened = await ctx.waitForSignal('open', { timeout: '1h' });
    return { version, by: opened?.by ?? null };
  });
  return [slow, gate];
}

let aws: LocalAws;
let dev: DevServer;
const lines: string[] = [];

/** The dashboard the server serves, built from the sources into a directory of this file's own (a clean clone has no ui/dist). */
const assetsDir = mkdtempSync(join(tmpdir(), 'orrery-dev-ui-'));

beforeAll(async () => {
  buildUi(assetsDir);
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
  dev = await startDevServer({
    jobs: definitions(1),
    port: 0,
    prefix: `dev-${process.pid}`,
    aws,
    assetsDir,
    log: (line) => lines.push(line),
  });
});

afterAll(async () => {
  await dev?.stop();
  await aws?.stop();
  rmSync(assetsDir, { recursive: true, force: true });
});

/** A call through the dashboard's API, as the UI makes it (its header guards writes against cross-site requests). */
async function dashboardApi<T>(path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${dev.url}/api${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'x-orrery-dashboard': '1', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${path}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

type JobView = { id: string; state: string; attempts: number; result?: unknown };

async function until(id: string, done: (job: JobView) => boolean, timeoutMs = 30_000): Promise<JobView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = await dashboardApi<JobView>(`/jobs/${id}`);
    if (done(job)) return job;
    if (Date.now() > deadline) throw new Error(`job ${id} is still ${job.state} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

it('keeps a running job and a waiting job through a reload, and runs the new code after it', async () => {
  runs = [];
  const gate = await dashboardApi<JobView>('/jobs', { type: 'gate', payload: {} });
  await until(gate.id, (job) => job.state === 'waiting');
  const slow = await dashboardApi<JobView>('/jobs', { type: 'slow', payload: { ms: 1_500 } });
  await until(slow.id, (job) => job.state === 'running');

  await dev.reload(definitions(2));

  // the reload waited for the running attempt: it finished on version 1, once
  expect(await dashboardApi<JobView>(`/jobs/${slow.id}`)).toMatchObject({
    state: 'succeeded',
    attempts: 1,
    result: { version: 1 },
  });

  await dashboardApi(`/jobs/${gate.id}/signals/open`, { payload: { by: 'ops' } });
  expect(await until(gate.id, (job) => job.state === 'succeeded')).toMatchObject({
    attempts: 1,
    result: { version: 2, by: 'ops' },
  });

  const after = await dashboardApi<JobView>('/jobs', { type: 'slow', payload: { ms: 0 } });
  expect(await until(after.id, (job) => job.state === 'succeeded')).toMatchObject({ result: { version: 2 } });

  expect(runs).toEqual([
    { type: 'gate', version: 1 },
    { type: 'slow', version: 1 },
    { type: 'gate', version: 2 },
    { type: 'slow', version: 2 },
  ]);
  expect(lines.some((line) => line.includes('succeeded') && line.includes(slow.id))).toBe(true);
});

it('enforces the grants and callers of the config: a caller gets its grants, the dashboard stays admin', async () => {
  const billing = assumedRole('billing', 'dev');
  const guarded = await startDevServer({
    jobs: definitions(3),
    port: 0,
    prefix: `dev-grants-${process.pid}`,
    aws,
    assetsDir,
    log: () => undefined,
    grants: { v: 1, principals: { [localRoleId('billing')]: [{ action: 'enqueue', types: ['slow'] }] } },
    callers: [billing],
  });
  try {
    const sign = sigV4Signer({ region: 'us-east-1', credentials: billing });
    const signedCall = async (path: string, body: unknown) => {
      const url = new URL(`${guarded.url}${path}`);
      const text = JSON.stringify(body);
      const headers = await sign({ method: 'POST', url, headers: { 'content-type': 'application/json' }, body: text });
      const response = await fetch(url, { method: 'POST', headers, body: text });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const allowed = await signedCall('/jobs', { type: 'slow', payload: { ms: 0 } });
    expect(allowed).toMatchObject({ status: 201, body: { enqueuedBy: billing.arn } });
    const refused = await signedCall('/jobs', { type: 'gate', payload: {} });
    expect(refused).toMatchObject({
      status: 403,
      body: { error: { code: 'forbidden', action: 'enqueue', type: 'gate' } },
    });
    // an unsigned call to the API is refused at the Function URL, as on AWS
    expect((await fetch(`${guarded.url}/jobs/${String(allowed.body.id)}`)).status).toBe(403);
    // the dashboard signs as the default local credentials, which stay admin
    const read = await fetch(`${guarded.url}/api/jobs/${String(allowed.body.id)}`, {
      headers: { 'x-orrery-dashboard': '1' },
    });
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ type: 'slow', enqueuedBy: billing.arn });
  } finally {
    await guarded.stop();
  }
});
