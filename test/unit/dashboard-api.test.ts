/**
 * The dashboard's endpoints through the API handler, on the in-memory fakes: GET /overview,
 * POST /jobs/bulk, POST /schedules/{name}/run, and payload search on GET /jobs. Every 400 is
 * checked to name the field and to write nothing.
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { allowEveryone } from '../../shared/api/access';
import { createApiHandler } from '../../shared/api/handler';
import {
  bulkResponseSchema,
  errorSchema,
  jobPageSchema,
  overviewSchema,
  runScheduleResponseSchema,
} from '../../shared/api/schemas';
import { ManualClock } from '../../shared/core/clock';
import { defineJobType } from '../../shared/core/job-type';
import { JOB_STATES } from '../../shared/core/states';
import { createLogger } from '../../shared/logger';
import { runNowId } from '../../shared/schedules/run-now';
import { FakeDeadLetterQueues, FakeJobControl, FakeJobIndex, FakeRedriveLog } from '../support/control-fakes';
import { FakeJobQueue, FakeJobScheduler, FakeJobStore, newJob, testConfig } from '../support/fakes';
import { FakeRecurringTrigger, FakeScheduleStore } from '../support/scheduling-fakes';

const T0 = Date.parse('2026-06-01T12:00:00.000Z');
const catalog = [
  defineJobType({ type: 'echo', payload: z.record(z.string(), z.unknown()) }),
  defineJobType({ type: 'report', payload: z.object({ day: z.string() }).strict(), retry: { maxAttempts: 4 } }),
];
const DLQ = (type: string) => `https://sqs.eu-west-1.amazonaws.com/123456789012/orrery-${type}-dlq`;

function setup() {
  const config = testConfig(['echo', 'report']);
  for (const [type, route] of Object.entries(config.routes)) {
    route.dlqUrl = DLQ(type);
    route.dlqArn = `arn:aws:sqs:eu-west-1:123456789012:orrery-${type}-dlq`;
  }
  const store = new FakeJobStore();
  const queue = new FakeJobQueue();
  const deadLetters = new FakeDeadLetterQueues();
  const clock = new ManualClock(T0);
  const index = new FakeJobIndex(store);
  const control = new FakeJobControl(store);
  const scheduleStore = new FakeScheduleStore();
  const trigger = new FakeRecurringTrigger();
  const api = createApiHandler({
    access: allowEveryone(),
    config,
    catalog,
    store,
    queue,
    scheduler: new FakeJobScheduler(),
    clock,
    logger: createLogger({ level: 'silent' }),
    controlPlane: { index, control, deadLetters, redrives: new FakeRedriveLog() },
    schedules: { store: scheduleStore, trigger },
  });
  const call = async (
    method: string,
    path: string,
    options: { body?: unknown; query?: Record<string, string>; headers?: Record<string, string> } = {},
  ) => {
    const text = options.body === undefined ? undefined : JSON.stringify(options.body);
    const query = options.query ?? {};
    const response = await api({
      version: '2.0',
      routeKey: '$default',
      rawPath: path,
      rawQueryString: new URLSearchParams(query).toString(),
      headers: { 'content-type': 'application/json', ...options.headers },
      ...(Object.keys(query).length > 0 ? { queryStringParameters: query } : {}),
      requestContext: { http: { method, path }, requestId: 'req-1' },
      isBase64Encoded: false,
      ...(text !== undefined ? { body: text } : {}),
    } as unknown as APIGatewayProxyEventV2);
    return { status: response.statusCode, headers: response.headers ?? {}, body: JSON.parse(response.body ?? 'null') };
  };
  return { call, store, queue, deadLetters, clock, index, scheduleStore, trigger };
}

/** A store's jobs as comparable text, to show nothing was written. */
const snapshot = (store: FakeJobStore) => JSON.stringify(store.all().sort((a, b) => (a.id < b.id ? -1 : 1)));

function expectBadRequest(response: { status: number | undefined; body: unknown }, code: string, paths: string[]) {
  expect(response.status).toBe(400);
  const { error } = errorSchema.parse(response.body);
  expect(error.code).toBe(code);
  expect(error.issues?.map((i) => i.path)).toEqual(paths);
}

describe('GET /overview', () => {
  it('answers every deployed type with exact counts, series, DLQ depth and oldest queued age', async () => {
    const h = setup();
    const at = (min: number) => T0 - min * 60_000;
    h.store.seed(newJob({ id: 'old', type: 'echo' }, at(90))); // before the window: not counted
    h.store.seed(newJob({ id: 'q1', type: 'echo' }, at(30)));
    h.store.seed(newJob({ id: 'q2', type: 'echo' }, at(10)));
    h.store.seed(
      newJob({ id: 's1', type: 'echo', state: 'succeeded', finishedAt: new Date(at(5)).toISOString() }, at(20)),
    );
    h.store.seed(
      newJob({ id: 'f1', type: 'report', state: 'failed', finishedAt: new Date(at(1)).toISOString() }, at(2)),
    );
    h.deadLetters.put(DLQ('report'), '{"v":1,"id":"f0","type":"report"}');
    h.deadLetters.put(DLQ('report'), '{"v":1,"id":"f9","type":"report"}');

    const response = await h.call('GET', '/overview');
    expect(response.status).toBe(200);
    const body = overviewSchema.parse(response.body);
    expect(body.generatedAt).toBe(new Date(T0).toISOString());
    expect(body.windowStart).toBe(new Date(T0 - 60 * 60_000).toISOString());
    expect(body.bucketMs).toBe(60_000);
    expect(body.types.map((t) => t.type)).toEqual(['echo', 'report']);
    const zero = Object.fromEntries(JOB_STATES.map((s) => [s, 0]));
    const [echo, report] = body.types;
    expect(echo?.counts).toEqual({ ...zero, queued: 2, succeeded: 1 });
    expect(echo?.countsScope).toBe('all 3 jobs created since 2026-06-01T11:00:00.000Z (the whole window)');
    expect(echo?.oldestQueuedAgeMs).toBe(30 * 60_000);
    expect(echo?.dlqDepth).toBe(0);
    expect(echo?.series).toHaveLength(61);
    expect(echo?.series.reduce((n, b) => n + b.created, 0)).toBe(3);
    expect(echo?.series.find((b) => b.succeeded > 0)?.start).toBe(new Date(at(5)).toISOString());
    expect(report?.counts).toEqual({ ...zero, failed: 1 });
    expect(report?.dlqDepth).toBe(2);
    expect(report?.oldestQueuedAgeMs).toBeNull();
    expect(report?.series.find((b) => b.failed > 0)?.start).toBe(new Date(at(1)).toISOString());
    // one byType query per shard of each type, from the window start, never by state
    expect(h.index.queries).toHaveLength(16);
    expect(h.index.queries.every((q) => q.partition.index === 'byType' && q.atLeast === body.windowStart)).toBe(true);
  });

  it('takes windowMinutes from 5 to 1440, and refuses anything else with 400 naming it', async () => {
    const h = setup();
    const day = overviewSchema.parse((await h.call('GET', '/overview', { query: { windowMinutes: '1440' } })).body);
    expect(day.bucketMs).toBe(30 * 60_000);
    expect((await h.call('GET', '/overview', { query: { windowMinutes: '5' } })).status).toBe(200);
    for (const ok of ['9', '10', '999', '1000', '1399', '1439']) {
      expect((await h.call('GET', '/overview', { query: { windowMinutes: ok } })).status).toBe(200);
    }
    for (const bad of ['4', '1441', '2000', '05', 'abc', '', '60.5', '-5']) {
      expectBadRequest(await h.call('GET', '/overview', { query: { windowMinutes: bad } }), 'validation_failed', [
        'windowMinutes',
      ]);
    }
    expectBadRequest(await h.call('GET', '/overview', { query: { window: '60' } }), 'validation_failed', ['window']);
  });

  it('reports a DLQ depth it cannot read as null, and still answers', async () => {
    const h = setup();
    h.deadLetters.depth = async () => {
      throw new Error('sqs down');
    };
    const body = overviewSchema.parse((await h.call('GET', '/overview')).body);
    expect(body.types.map((t) => t.dlqDepth)).toEqual([null, null]);
  });
});

describe('POST /jobs/bulk', () => {
  it('handles each id like POST /jobs/{id}/retry, in order: applied, refused with the state, not_found', async () => {
    const h = setup();
    h.store.seed(
      newJob({ id: 'f1', type: 'echo', state: 'failed', finishedAt: new Date(T0).toISOString() }, T0 - 5000),
    );
    h.store.seed(newJob({ id: 'r1', type: 'echo', state: 'running' }, T0 - 4000));
    h.store.seed(
      newJob({ id: 'c1', type: 'report', state: 'cancelled', finishedAt: new Date(T0).toISOString() }, T0 - 3000),
    );
    const response = await h.call('POST', '/jobs/bulk', { body: { action: 'retry', ids: ['r1', 'nope', 'f1', 'c1'] } });
    expect(response.status).toBe(200);
    expect(bulkResponseSchema.parse(response.body)).toEqual({
      results: [
        { id: 'r1', status: 'refused', state: 'running' },
        { id: 'nope', status: 'not_found' },
        { id: 'f1', status: 'applied', state: 'queued' },
        { id: 'c1', status: 'applied', state: 'queued' },
      ],
    });
    expect(h.store.peek('f1')?.state).toBe('queued');
    expect(h.queue.sent.map((s) => s.message.id).sort()).toEqual(['c1', 'f1']);
  });

  it('refuses a retry of a job whose type is not deployed, with its state, and changes nothing', async () => {
    const h = setup();
    h.store.seed(
      newJob({ id: 'g1', type: 'gone', state: 'failed', finishedAt: new Date(T0).toISOString() }, T0 - 5000),
    );
    const body = bulkResponseSchema.parse(
      (await h.call('POST', '/jobs/bulk', { body: { action: 'retry', ids: ['g1'] } })).body,
    );
    expect(body.results).toEqual([{ id: 'g1', status: 'refused', state: 'failed' }]);
    expect(h.store.peek('g1')?.state).toBe('failed');
    expect(h.queue.sent).toEqual([]);
  });

  it('cancels: applied for an unfinished job, refused for a finished one', async () => {
    const h = setup();
    h.store.seed(newJob({ id: 'q1', type: 'echo' }, T0 - 5000));
    h.store.seed(
      newJob({ id: 's1', type: 'echo', state: 'succeeded', finishedAt: new Date(T0).toISOString() }, T0 - 4000),
    );
    const body = bulkResponseSchema.parse(
      (await h.call('POST', '/jobs/bulk', { body: { action: 'cancel', ids: ['s1', 'q1'] } })).body,
    );
    expect(body.results).toEqual([
      { id: 's1', status: 'refused', state: 'succeeded' },
      { id: 'q1', status: 'applied', state: 'cancelled' },
    ]);
  });

  it('refuses (400, nothing written) an unknown action, 0 or 101 ids, duplicates, a malformed id', async () => {
    const h = setup();
    h.store.seed(newJob({ id: 'q1', type: 'echo' }, T0 - 5000));
    const before = snapshot(h.store);
    const post = (body: unknown) => h.call('POST', '/jobs/bulk', { body });
    expectBadRequest(await post({ action: 'delete', ids: ['q1'] }), 'validation_failed', ['action']);
    expectBadRequest(await post({ action: 'cancel', ids: [] }), 'validation_failed', ['ids']);
    const many = Array.from({ length: 101 }, (_, i) => `j-${i}`);
    expectBadRequest(await post({ action: 'cancel', ids: many }), 'validation_failed', ['ids']);
    expectBadRequest(await post({ action: 'cancel', ids: ['q1', 'x', 'q1'] }), 'validation_failed', ['ids.2']);
    expectBadRequest(await post({ action: 'cancel', ids: ['q1', 'bad id'] }), 'validation_failed', ['ids.1']);
    expectBadRequest(await post({ action: 'cancel', ids: ['q1'], extra: 1 }), 'validation_failed', ['extra']);
    expectBadRequest(await post({ action: 'cancel' }), 'validation_failed', ['ids']);
    expect(snapshot(h.store)).toBe(before);
    expect(h.store.peek('q1')?.state).toBe('queued');
    expect(h.queue.sent).toEqual([]);
    // 100 unique ids are fine
    const hundred = bulkResponseSchema.parse((await post({ action: 'cancel', ids: many.slice(0, 100) })).body);
    expect(hundred.results).toHaveLength(100);
    expect(hundred.results.every((r) => r.status === 'not_found')).toBe(true);
  });
});

describe('POST /schedules/{name}/run', () => {
  async function withSchedule(state: 'enabled' | 'paused' = 'enabled') {
    const h = setup();
    const created = await h.call('POST', '/schedules', {
      body: { name: 'nightly', type: 'report', payload: { day: 'today' }, cron: '0 2 * * *' },
    });
    expect(created.status).toBe(201);
    if (state === 'paused') expect((await h.call('POST', '/schedules/nightly/pause')).status).toBe(200);
    return h;
  }

  it("enqueues one job now with the schedule's type, payload and maxAttempts (201 { job })", async () => {
    const h = await withSchedule();
    const response = await h.call('POST', '/schedules/nightly/run', { headers: { 'content-type': '' } });
    expect(response.status).toBe(201);
    const { job } = runScheduleResponseSchema.parse(response.body);
    expect(job).toMatchObject({
      type: 'report',
      payload: { day: 'today' },
      maxAttempts: 4,
      state: 'queued',
      schedule: 'nightly',
      runAt: new Date(T0).toISOString(),
    });
    expect(job.id).toMatch(/^nightly\.now\.[0-9a-f]{16}$/);
    expect(response.headers.location).toBe(`/jobs/${job.id}`);
    expect(h.queue.sent.map((s) => s.message)).toEqual([{ v: 1, id: job.id, type: 'report' }]);
    const schedule = (await h.call('GET', '/schedules/nightly')).body;
    expect(schedule.lastRunId).toBeNull(); // the schedule itself is unchanged
    // without a key, each request is a new run
    const again = await h.call('POST', '/schedules/nightly/run');
    expect(again.status).toBe(201);
    expect(again.body.job.id).not.toBe(job.id);
  });

  it('runs a paused schedule too', async () => {
    const h = await withSchedule('paused');
    const response = await h.call('POST', '/schedules/nightly/run');
    expect(response.status).toBe(201);
    expect((await h.call('GET', '/schedules/nightly')).body.state).toBe('paused');
  });

  it('creates one job for a retried request with the same Idempotency-Key (then 200), or the same body id', async () => {
    const h = await withSchedule();
    const headers = { 'idempotency-key': 'click-42' };
    const first = await h.call('POST', '/schedules/nightly/run', { headers });
    const second = await h.call('POST', '/schedules/nightly/run', { headers });
    expect(first.status).toBe(201);
    expect(second.status).toBe(200);
    expect(first.body.job.id).toBe(runNowId('nightly', 'click-42'));
    expect(second.body.job.id).toBe(first.body.job.id);
    const byId = await h.call('POST', '/schedules/nightly/run', { body: { id: 'my-run-1' } });
    const byIdAgain = await h.call('POST', '/schedules/nightly/run', { body: { id: 'my-run-1' } });
    expect([byId.status, byIdAgain.status]).toEqual([201, 200]);
    expect(byId.body.job.id).toBe('my-run-1');
    expect(
      h.store
        .all()
        .map((j) => j.id)
        .sort(),
    ).toEqual([first.body.job.id, 'my-run-1'].sort());
  });

  it('answers 404 schedule_not_found, and 400 (nothing written) for a bad body or key', async () => {
    const h = await withSchedule();
    const missing = await h.call('POST', '/schedules/absent/run');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('schedule_not_found');
    expectBadRequest(await h.call('POST', '/schedules/nightly/run', { body: { id: 'bad id' } }), 'validation_failed', [
      'id',
    ]);
    expectBadRequest(await h.call('POST', '/schedules/nightly/run', { body: { idd: 'x' } }), 'validation_failed', [
      'idd',
    ]);
    expectBadRequest(
      await h.call('POST', '/schedules/nightly/run', { headers: { 'idempotency-key': 'x'.repeat(256) } }),
      'validation_failed',
      ['headers.idempotency-key'],
    );
    expect(h.store.all()).toEqual([]);
    expect(h.queue.sent).toEqual([]);
  });
});

describe('GET /jobs with payload.<path>', () => {
  function seeded() {
    const h = setup();
    const jobs = [
      { id: 'a', payload: { tenant: 'acme', n: 1, user: { plan: 'pro' } } },
      { id: 'b', payload: { tenant: 'other', n: 2, user: { plan: 'pro' } } },
      { id: 'c', payload: { tenant: 'acme', n: 2, flag: true } },
      { id: 'd', payload: { tenant: 'acme', n: '2' } },
    ];
    jobs.forEach((j, i) => {
      h.store.seed(newJob({ id: j.id, type: 'echo', payload: j.payload }, T0 - 10_000 + i));
    });
    return h;
  }
  const ids = (body: unknown) => jobPageSchema.parse(body).items.map((s) => s.id);

  it('keeps the jobs whose payload holds the value at the path; summaries carry no payload', async () => {
    const h = seeded();
    const acme = await h.call('GET', '/jobs', { query: { type: 'echo', 'payload.tenant': 'acme' } });
    expect(acme.status).toBe(200);
    expect(ids(acme.body)).toEqual(['d', 'c', 'a']);
    expect(acme.body.items.every((s: object) => !('payload' in s))).toBe(true);
    // numbers compare as their JSON text: 2 and "2" both match "2"
    expect(ids((await h.call('GET', '/jobs', { query: { 'payload.n': '2' } })).body)).toEqual(['d', 'c', 'b']);
    expect(ids((await h.call('GET', '/jobs', { query: { 'payload.flag': 'true' } })).body)).toEqual(['c']);
    const both = await h.call('GET', '/jobs', { query: { 'payload.tenant': 'acme', 'payload.user.plan': 'pro' } });
    expect(ids(both.body)).toEqual(['a']);
    expect(h.index.queries.at(-1)?.withPayload).toBe(true);
  });

  it('pages a filtered listing: short pages, nextCursor continues, and a cursor only fits its own filters', async () => {
    const h = seeded();
    const query = { type: 'echo', 'payload.tenant': 'acme', limit: '1' };
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10; i++) {
      const page = jobPageSchema.parse(
        (await h.call('GET', '/jobs', { query: { ...query, ...(cursor ? { cursor } : {}) } })).body,
      );
      seen.push(...page.items.map((s) => s.id));
      if (page.nextCursor === null) break;
      cursor = page.nextCursor;
      if (i === 0) {
        const other = await h.call('GET', '/jobs', {
          query: { type: 'echo', 'payload.tenant': 'other', limit: '1', cursor: page.nextCursor },
        });
        expect(other.status).toBe(400);
        expect(other.body.error.code).toBe('invalid_cursor');
      }
    }
    expect(seen).toEqual(['d', 'c', 'a']);
  });

  it('refuses more than 3 conditions or a bad path with 400 naming the parameter', async () => {
    const h = seeded();
    const four = { 'payload.a': '1', 'payload.b': '1', 'payload.c': '1', 'payload.d': '1' };
    expectBadRequest(await h.call('GET', '/jobs', { query: four }), 'validation_failed', ['payload']);
    expectBadRequest(await h.call('GET', '/jobs', { query: { 'payload.a..b': '1' } }), 'validation_failed', [
      'payload.a..b',
    ]);
  });

  it('does not read payloads without a payload filter', async () => {
    const h = seeded();
    await h.call('GET', '/jobs', { query: { type: 'echo' } });
    expect(h.index.queries.every((q) => q.withPayload === undefined)).toBe(true);
  });
});
