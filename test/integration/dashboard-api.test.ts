/**
 * The dashboard's endpoints against local AWS (DynamoDB Local, fauxqs, the Scheduler stand-in)
 * through the real SDK and the API's HTTP server: GET /overview (counts from the `byType`
 * index, DLQ depth from SQS), POST /jobs/bulk, POST /schedules/{name}/run, and payload search
 * on GET /jobs (inline payloads and payloads in their own item). Each test deploys its own
 * namespace; no worker runs, so every job stays where the test put it.
 */

import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import {
  bulkResponseSchema,
  errorSchema,
  jobPageSchema,
  jobViewSchema,
  overviewSchema,
  runScheduleResponseSchema,
} from '../../shared/api/schemas';
import { keyOf } from '../../shared/aws/attributes';
import { defineJobType } from '../../shared/core/job-type';
import { JOB_STATES } from '../../shared/core/states';
import { keys } from '../../shared/core/table';
import { createLogger } from '../../shared/logger';
import type { JobDefinition } from '../../shared/runtime/job-definition';
import { runNowId } from '../../shared/schedules/run-now';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';
import { newJob } from '../support/fakes';

let aws: LocalAws;
const cleanup: (() => Promise<void>)[] = [];

beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
});

afterEach(async () => {
  for (const stop of cleanup.splice(0).reverse()) await stop();
});

afterAll(async () => {
  await aws?.stop();
});

const never = async () => {
  throw new Error('no worker runs in these tests');
};
const echo: JobDefinition = {
  spec: defineJobType({ type: 'echo', payload: z.record(z.string(), z.unknown()), timeoutMs: 5_000 }),
  run: never,
};
const other: JobDefinition = {
  spec: defineJobType({ type: 'other', payload: z.record(z.string(), z.unknown()), timeoutMs: 5_000 }),
  run: never,
};
const report: JobDefinition = {
  spec: defineJobType({
    type: 'report',
    payload: z.object({ day: z.string() }).strict(),
    timeoutMs: 5_000,
    retry: { maxAttempts: 4 },
  }),
  run: never,
};

async function start(label: string): Promise<LocalPlatform> {
  const platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix(label),
    jobs: [echo, other, report],
    runWorkers: false,
    logger: createLogger({ level: 'error' }),
  });
  cleanup.push(() => platform.stop());
  return platform;
}

async function request(
  platform: LocalPlatform,
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${platform.url}${path}`, {
    method,
    headers: { ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}), ...options.headers },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function enqueue(platform: LocalPlatform, type: string, id: string, payload: Record<string, unknown> = {}) {
  const { status, body } = await request(platform, 'POST', '/jobs', { body: { type, id, payload } });
  expect(status, JSON.stringify(body)).toBe(201);
}

function expectBadRequest(response: { status: number; body: unknown }, paths: string[]) {
  expect(response.status).toBe(400);
  const { error } = errorSchema.parse(response.body);
  expect(error.code).toBe('validation_failed');
  expect(error.issues?.map((i) => i.path)).toEqual(paths);
}

async function readyMessages(platform: LocalPlatform, type: string): Promise<number> {
  const url = platform.deployment.queues[type]?.url;
  const out = await platform.clients.sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  return Number(out.Attributes?.ApproximateNumberOfMessages);
}

const states = async (platform: LocalPlatform, ids: string[]) =>
  Promise.all(ids.map(async (id) => (await platform.store.get(id))?.state ?? 'missing'));

describe('POST /jobs/bulk and GET /overview', () => {
  it('cancels and retries each id in order, refuses bad input without writing, and counts the result', async () => {
    const platform = await start('dash-bulk');
    const startedAt = Date.now();
    for (const id of ['e1', 'e2', 'e3']) await enqueue(platform, 'echo', id);
    for (const id of ['o1', 'o2']) await enqueue(platform, 'other', id);
    expect(await readyMessages(platform, 'echo')).toBe(3);

    const cancel = await request(platform, 'POST', '/jobs/bulk', {
      body: { action: 'cancel', ids: ['e1', 'e2', 'missing'] },
    });
    expect(cancel.status).toBe(200);
    expect(bulkResponseSchema.parse(cancel.body).results).toEqual([
      { id: 'e1', status: 'applied', state: 'cancelled' },
      { id: 'e2', status: 'applied', state: 'cancelled' },
      { id: 'missing', status: 'not_found' },
    ]);
    const retry = await request(platform, 'POST', '/jobs/bulk', { body: { action: 'retry', ids: ['e3', 'e1'] } });
    expect(bulkResponseSchema.parse(retry.body).results).toEqual([
      { id: 'e3', status: 'refused', state: 'queued' },
      { id: 'e1', status: 'applied', state: 'queued' },
    ]);
    expect(await readyMessages(platform, 'echo')).toBe(4); // the retry sent e1 again

    // 400: nothing changes, nothing is sent
    expectBadRequest(await request(platform, 'POST', '/jobs/bulk', { body: { action: 'cancel', ids: ['e3', 'e3'] } }), [
      'ids.1',
    ]);
    expectBadRequest(await request(platform, 'POST', '/jobs/bulk', { body: { action: 'purge', ids: ['e3'] } }), [
      'action',
    ]);
    expectBadRequest(await request(platform, 'POST', '/jobs/bulk', { body: { action: 'cancel', ids: [] } }), ['ids']);
    expect(await states(platform, ['e1', 'e2', 'e3', 'o1', 'o2'])).toEqual([
      'queued',
      'cancelled',
      'queued',
      'queued',
      'queued',
    ]);
    expect(await readyMessages(platform, 'echo')).toBe(4);

    // two messages in echo's DLQ
    const dlqUrl = platform.deployment.queues.echo?.dlqUrl;
    for (const id of ['x1', 'x2']) {
      await platform.clients.sqs.send(
        new SendMessageCommand({ QueueUrl: dlqUrl, MessageBody: JSON.stringify({ v: 1, id, type: 'echo' }) }),
      );
    }

    const response = await request(platform, 'GET', '/overview?windowMinutes=30');
    expect(response.status).toBe(200);
    const overview = overviewSchema.parse(response.body);
    expect(overview.bucketMs).toBe(60_000);
    expect(overview.types.map((t) => t.type)).toEqual(['echo', 'other', 'report']);
    const zero = Object.fromEntries(JOB_STATES.map((s) => [s, 0]));
    const [e, o, r] = overview.types;
    expect(e?.counts).toEqual({ ...zero, queued: 2, cancelled: 1 });
    expect(o?.counts).toEqual({ ...zero, queued: 2 });
    expect(r?.counts).toEqual(zero);
    expect(e?.countsScope).toBe(`all 3 jobs created since ${overview.windowStart} (the whole window)`);
    expect([e?.dlqDepth, o?.dlqDepth, r?.dlqDepth]).toEqual([2, 0, 0]);
    expect(e?.series.reduce((n, b) => n + b.created, 0)).toBe(3);
    expect(o?.series.reduce((n, b) => n + b.created, 0)).toBe(2);
    const age = o?.oldestQueuedAgeMs ?? -1;
    expect(age).toBeGreaterThanOrEqual(0);
    expect(age).toBeLessThanOrEqual(Date.now() - startedAt);
    expect(r?.oldestQueuedAgeMs).toBeNull();

    expectBadRequest(await request(platform, 'GET', '/overview?windowMinutes=4'), ['windowMinutes']);
  });
});

describe('GET /overview on a busy shard', () => {
  it('reads at most 100 entries of a shard and counts exactly the jobs created since the cut, saying so', async () => {
    const platform = await start('dash-busy');
    // 103 jobs on one byType shard of echo, one second apart, all within the window
    const ids: string[] = [];
    for (let n = 0; ids.length < 103; n++) {
      const id = `busy-${n}`;
      if (keys.byType('echo', id) === keys.byTypeShard('echo', 0)) ids.push(id);
    }
    const now = Date.now();
    for (const [i, id] of ids.entries()) {
      const job = newJob({ id, type: 'echo', payload: {}, payloadHash: `h-${id}` }, now - 200_000 + i * 1000);
      expect((await platform.store.create(job)).created).toBe(true);
    }
    const overview = overviewSchema.parse((await request(platform, 'GET', '/overview?windowMinutes=10')).body);
    const echoType = overview.types.find((t) => t.type === 'echo');
    expect(echoType?.counts.queued).toBe(100);
    expect(Object.values(echoType?.counts ?? {}).reduce((a, b) => a + b, 0)).toBe(100);
    const cut = new Date(now - 200_000 + 3 * 1000).toISOString(); // the 100th newest: ids[3]
    expect(echoType?.countsScope).toBe(
      `the 100 newest jobs, created since ${cut} (truncated: the window holds more jobs than an overview reads)`,
    );
    expect(echoType?.series.reduce((n, b) => n + b.created, 0)).toBe(100);
  });
});

describe('POST /schedules/{name}/run', () => {
  it('enqueues one job from a paused schedule, once per Idempotency-Key; 404 for an unknown schedule', async () => {
    const platform = await start('dash-run');
    const created = await request(platform, 'POST', '/schedules', {
      body: { name: 'nightly', type: 'report', payload: { day: 'today' }, cron: '0 2 * * *' },
    });
    expect(created.status).toBe(201);
    expect((await request(platform, 'POST', '/schedules/nightly/pause')).status).toBe(200);

    const headers = { 'idempotency-key': 'click-7' };
    const first = await request(platform, 'POST', '/schedules/nightly/run', { headers });
    const again = await request(platform, 'POST', '/schedules/nightly/run', { headers });
    expect([first.status, again.status]).toEqual([201, 200]);
    const { job } = runScheduleResponseSchema.parse(first.body);
    expect(job.id).toBe(runNowId('nightly', 'click-7'));
    expect(runScheduleResponseSchema.parse(again.body).job.id).toBe(job.id);
    expect(job).toMatchObject({ type: 'report', payload: { day: 'today' }, maxAttempts: 4, state: 'queued' });
    const fetched = jobViewSchema.parse((await request(platform, 'GET', `/jobs/${job.id}`)).body);
    expect(fetched).toEqual(job);
    expect(await readyMessages(platform, 'report')).toBe(2); // the replay re-sends a job not started yet

    const missing = await request(platform, 'POST', '/schedules/absent/run', { headers });
    expect(missing.status).toBe(404);
    expect(errorSchema.parse(missing.body).error.code).toBe('schedule_not_found');
    expectBadRequest(await request(platform, 'POST', '/schedules/nightly/run', { body: { id: '../x' } }), ['id']);

    const listed = jobPageSchema.parse((await request(platform, 'GET', '/jobs?type=report')).body);
    expect(listed.items.map((s) => s.id)).toEqual([job.id]);
    const schedule = await request(platform, 'GET', '/schedules/nightly');
    expect(schedule.body.state).toBe('paused');
  });
});

describe('GET /jobs?payload.<path>=', () => {
  it('matches inline payloads and payloads in their own item; summaries stay without payload', async () => {
    const platform = await start('dash-search');
    const big = { tenant: 'acme', note: 'x'.repeat(4000) };
    await enqueue(platform, 'echo', 'p1', { tenant: 'acme', n: 1 });
    await enqueue(platform, 'echo', 'p2', { tenant: 'other', n: 2 });
    await enqueue(platform, 'echo', 'p3', big);
    await enqueue(platform, 'echo', 'p4', { tenant: 'acme', n: 2 });
    // p3's payload is in an item of its own
    const raw = await platform.clients.dynamo.send(
      new GetItemCommand({ TableName: platform.config.tableName, Key: keyOf(keys.job('p3')) }),
    );
    expect(raw.Item?.payloadKey?.S).toBeDefined();
    expect(raw.Item?.payload).toBeUndefined();

    const page = jobPageSchema.parse((await request(platform, 'GET', '/jobs?type=echo&payload.tenant=acme')).body);
    expect(page.items.map((s) => s.id)).toEqual(['p4', 'p3', 'p1']);
    expect(page.items.every((s) => !('payload' in s))).toBe(true);
    const two = jobPageSchema.parse((await request(platform, 'GET', '/jobs?payload.n=2')).body);
    expect(two.items.map((s) => s.id)).toEqual(['p4', 'p2']);

    // page by page: short pages, nextCursor continues until null
    const seen: string[] = [];
    let cursor = '';
    for (let i = 0; i < 10; i++) {
      const next = jobPageSchema.parse(
        (await request(platform, 'GET', `/jobs?type=echo&payload.tenant=acme&limit=1${cursor}`)).body,
      );
      seen.push(...next.items.map((s) => s.id));
      if (next.nextCursor === null) break;
      cursor = `&cursor=${next.nextCursor}`;
    }
    expect(seen).toEqual(['p4', 'p3', 'p1']);

    const four = '/jobs?payload.a=1&payload.b=1&payload.c=1&payload.d=1';
    expectBadRequest(await request(platform, 'GET', four), ['payload']);
  });
});
