import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { allowEveryone } from '../../shared/api/access';
import { MAX_BATCH_REQUEST_BYTES } from '../../shared/api/batch-service';
import { createApiHandler } from '../../shared/api/handler';
import { MAX_JSON_DEPTH } from '../../shared/api/json-depth';
import {
  batchResponseSchema,
  dlqPeekSchema,
  errorSchema,
  jobPageSchema,
  jobViewSchema,
  redriveResultSchema,
} from '../../shared/api/schemas';
import { translateAwsError } from '../../shared/aws/errors';
import { ManualClock } from '../../shared/core/clock';
import type { JobIndex } from '../../shared/core/control-ports';
import { describeJob } from '../../shared/core/describe';
import { defineJobType } from '../../shared/core/job-type';
import { retryScheduleName, wakeScheduleName } from '../../shared/core/ports';
import { ConfigError, DependencyError, ThrottledError } from '../../shared/errors';
import { createLogger } from '../../shared/logger';
import { FakeDeadLetterQueues, FakeJobControl, FakeRedriveLog } from '../support/control-fakes';
import { captureLogs, FakeJobQueue, FakeJobScheduler, FakeJobStore, newJob, testConfig } from '../support/fakes';
import { echoJob, harness, messageFor, T0 } from './worker-harness';

const catalog = [
  defineJobType({ type: 'echo', payload: z.record(z.string(), z.unknown()) }),
  defineJobType({
    type: 'mail',
    payload: z.object({ to: z.string(), secret: z.string() }).strict(),
    describe: (p) => ({ domain: p.to.split('@')[1] }),
  }),
];

const DLQ = (type: string) => `https://sqs.eu-west-1.amazonaws.com/123456789012/orrery-${type}-dlq`;

function setup(options: { index?: JobIndex } = {}) {
  const config = testConfig(['echo', 'mail']);
  for (const [type, route] of Object.entries(config.routes)) {
    route.dlqUrl = DLQ(type);
    route.dlqArn = `arn:aws:sqs:eu-west-1:123456789012:orrery-${type}-dlq`;
  }
  const store = new FakeJobStore();
  const queue = new FakeJobQueue();
  const scheduler = new FakeJobScheduler();
  const deadLetters = new FakeDeadLetterQueues();
  const clock = new ManualClock(T0);
  const logs = captureLogs();
  const index: JobIndex = options.index ?? { query: async () => ({ entries: [], more: false }) };
  const control = new FakeJobControl(store);
  const redrives = new FakeRedriveLog();
  const api = createApiHandler({
    access: allowEveryone(),
    config,
    catalog,
    store,
    queue,
    scheduler,
    clock,
    logger: createLogger({ level: 'debug', sink: logs.sink }),
    controlPlane: { index, control, deadLetters, redrives },
  });
  /** `as`: the caller's IAM ARN, as the Function URL's authorizer passes it. @default none (anonymous) */
  const call = async (
    method: string,
    path: string,
    body?: unknown,
    rawQuery: Record<string, string> = {},
    as?: string,
  ) => {
    const text = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const response = await api({
      version: '2.0',
      routeKey: '$default',
      rawPath: path,
      rawQueryString: new URLSearchParams(rawQuery).toString(),
      headers: { 'content-type': 'application/json' },
      ...(Object.keys(rawQuery).length > 0 ? { queryStringParameters: rawQuery } : {}),
      requestContext: {
        http: { method, path },
        requestId: 'req-1',
        ...(as ? { authorizer: { iam: { accountId: '123456789012', userArn: as } } } : {}),
      },
      isBase64Encoded: false,
      ...(text !== undefined ? { body: text } : {}),
    } as unknown as APIGatewayProxyEventV2);
    return { status: response.statusCode, headers: response.headers ?? {}, body: JSON.parse(response.body ?? 'null') };
  };
  return { api, call, store, queue, scheduler, deadLetters, control, redrives, clock, config, logs: logs.lines };
}

describe('routing', () => {
  it('serves POST /jobs/batch and POST /jobs:batch, and still GET /jobs/{id} for a job named "batch"', async () => {
    const { call } = setup();
    expect((await call('POST', '/jobs/batch', { jobs: [{ type: 'echo', payload: {} }] })).status).toBe(200);
    expect((await call('POST', '/jobs:batch', { jobs: [{ type: 'echo', payload: {} }] })).status).toBe(200);
    const get = await call('GET', '/jobs/batch');
    expect(get.status).toBe(404);
    expect(get.body.error.code).toBe('job_not_found');
  });

  it('answers 405 with every method of the path', async () => {
    const { call } = setup();
    const response = await call('DELETE', '/jobs');
    expect(response.status).toBe(405);
    expect(String(response.headers.allow).split(', ').sort()).toEqual(['GET', 'POST']);
  });
});

describe('POST /jobs/batch', () => {
  it('answers one result per job, in order: created, existing, and errors that name the item', async () => {
    const { call, queue } = setup();
    const response = await call('POST', '/jobs/batch', {
      jobs: [
        { id: 'dup', type: 'echo', payload: { a: 1 } },
        { type: 'nope', payload: {} },
        { id: 'dup', type: 'echo', payload: { a: 1 } },
        { id: 'dup', type: 'echo', payload: { a: 2 } },
        { type: 'mail', payload: { to: 'x' } },
        'not an object',
        { id: 'other', type: 'echo', payload: {}, extra: 1 },
        { id: 'fine', type: 'echo', payload: {} },
      ],
    });
    expect(response.status).toBe(200);
    const body = batchResponseSchema.parse(response.body);
    expect(body.results.map((r) => [r.index, r.status])).toEqual([
      [0, 'created'],
      [1, 'error'],
      [2, 'existing'],
      [3, 'error'],
      [4, 'error'],
      [5, 'error'],
      [6, 'error'],
      [7, 'created'],
    ]);
    const codes = body.results.map((r) => (r.status === 'error' ? r.error.code : r.job.id));
    expect(codes).toEqual([
      'dup',
      'unknown_type',
      'dup',
      'id_conflict',
      'invalid_payload',
      'validation_failed',
      'validation_failed',
      'fine',
    ]);
    const extra = body.results[6];
    expect(extra?.status === 'error' && extra.error.issues?.map((i) => i.path)).toEqual(['extra']);
    // The replay re-sends a not-yet-started job's message (harmless duplicate); 2 new jobs + 1 replay.
    expect(queue.sent.map((s) => s.message.id).sort()).toEqual(['dup', 'dup', 'fine']);
  });

  it('rejects the whole body only when it is not { jobs: [1..100 items] }', async () => {
    const { call } = setup();
    const many = Array.from({ length: 101 }, () => ({ type: 'echo', payload: {} }));
    for (const body of [
      { jobs: [] },
      { jobs: many },
      [{ type: 'echo', payload: {} }],
      { jobs: 'x' },
      { jobs: [], x: 1 },
    ]) {
      const response = await call('POST', '/jobs/batch', body);
      expect(response.status, JSON.stringify(body).slice(0, 40)).toBe(400);
      expect(errorSchema.parse(response.body).error.code).toBe('validation_failed');
    }
  });

  it('takes bodies above the single-job limit up to 5 MiB and says so in the 413', async () => {
    const { call } = setup();
    const blob = 'x'.repeat(200 * 1024);
    const ok = await call('POST', '/jobs/batch', { jobs: [0, 1, 2].map(() => ({ type: 'echo', payload: { blob } })) });
    expect(ok.status).toBe(200);
    const big = await call('POST', '/jobs/batch', {
      jobs: [{ type: 'echo', payload: { blob: 'y'.repeat(MAX_BATCH_REQUEST_BYTES) } }],
    });
    expect(big.status).toBe(413);
    expect(big.body.error.limitBytes).toBe(MAX_BATCH_REQUEST_BYTES);
    expect(big.body.error.message).toMatch(/5242880 bytes.*Function URL/);
  });

  it('sends the messages of 100 new jobs in 10 SendMessageBatch calls of 10', async () => {
    const { call, queue, store } = setup();
    const jobs = Array.from({ length: 100 }, (_, n) => ({ id: `b-${n}`, type: 'echo', payload: { n } }));
    const body = batchResponseSchema.parse((await call('POST', '/jobs/batch', { jobs })).body);
    expect(body.results.every((r) => r.status === 'created')).toBe(true);
    expect(queue.batches.map((b) => b.ids.length)).toEqual(Array(10).fill(10));
    expect(queue.sent.map((s) => s.message.id).sort()).toEqual(jobs.map((j) => j.id).sort());
    expect(store.calls.filter((c) => c.method === 'create')).toHaveLength(100);
  });

  it('reports a job whose message SQS refused as an item error; it stays stored and a replay sends it', async () => {
    const { call, queue, store } = setup();
    queue.failEntry = (message) => (message.id === 'b-1' ? new DependencyError('SQS refused the entry') : undefined);
    const jobs = [0, 1, 2].map((n) => ({ id: `b-${n}`, type: 'echo', payload: { n } }));
    const body = batchResponseSchema.parse((await call('POST', '/jobs/batch', { jobs })).body);
    expect(body.results.map((r) => (r.status === 'error' ? `error:${r.error.code}` : r.status))).toEqual([
      'created',
      'error:dependency_failed',
      'created',
    ]);
    expect(queue.sent.map((s) => s.message.id).sort()).toEqual(['b-0', 'b-2']);
    expect(store.peek('b-1')?.state).toBe('queued');

    queue.failEntry = () => undefined;
    const replay = batchResponseSchema.parse((await call('POST', '/jobs/batch', { jobs: [jobs[1]] })).body);
    expect(replay.results[0]?.status).toBe('existing');
    expect(queue.sent.map((s) => s.message.id)).toContain('b-1');
  });

  it('reports every job of a failed SendMessageBatch as an item error, and keeps the delays of the others', async () => {
    const { call, queue } = setup();
    queue.failNext('sendBatch', new DependencyError('SQS SendMessageBatch failed'));
    const jobs = [
      { id: 'd-0', type: 'echo', payload: {}, delaySeconds: 30 },
      { id: 'd-1', type: 'mail', payload: { to: 'a@b', secret: 's' } },
    ];
    const body = batchResponseSchema.parse((await call('POST', '/jobs/batch', { jobs })).body);
    // One queue per type: the echo call failed, the mail call went.
    expect(body.results.map((r) => r.status)).toEqual(['error', 'created']);
    const again = batchResponseSchema.parse((await call('POST', '/jobs/batch', { jobs: [jobs[0]] })).body);
    expect(again.results[0]?.status).toBe('existing');
    expect(queue.sent.find((s) => s.message.id === 'd-0')?.delaySeconds).toBe(30);
  });

  it('reports a throttled item as an item error with code throttled', async () => {
    const { call, store } = setup();
    store.failNext('create', new ThrottledError('AWS throttled DynamoDB PutItem; retry shortly'));
    const response = await call('POST', '/jobs/batch', { jobs: [{ id: 'a', type: 'echo', payload: {} }] });
    const result = batchResponseSchema.parse(response.body).results[0];
    expect(result?.status === 'error' && result.error.code).toBe('throttled');
  });
});

describe('errors', () => {
  it('answers 429 throttled with retry-after when AWS throttles a listing', async () => {
    const index: JobIndex = {
      query: async () =>
        translateAwsError(
          Object.assign(new Error('Rate exceeded'), {
            name: 'ThrottlingException',
            $metadata: { httpStatusCode: 400 },
          }),
          'DynamoDB Query',
        ),
    };
    const { call } = setup({ index });
    const response = await call('GET', '/jobs', undefined, { type: 'echo' });
    expect(response.status).toBe(429);
    expect(response.headers['retry-after']).toBe('1');
    expect(errorSchema.parse(response.body).error.code).toBe('throttled');
  });

  it('answers 429 with retry-after when AWS throttles an enqueue', async () => {
    const { call, store } = setup();
    store.failNext('create', new ThrottledError('AWS throttled DynamoDB PutItem (create job); retry shortly'));
    const response = await call('POST', '/jobs', { type: 'echo', payload: {} });
    expect(response.status).toBe(429);
    expect(response.headers['retry-after']).toBe('1');
  });

  it(`refuses JSON nested deeper than ${MAX_JSON_DEPTH} levels with 400, without recursing into it`, async () => {
    const { call } = setup();
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    const a = await call('POST', '/jobs', deep);
    expect([a.status, a.body.error.code]).toEqual([400, 'malformed_body']);
    const payload = `{"type":"echo","payload":{"a":${'['.repeat(70)}${']'.repeat(70)}}}`;
    const b = await call('POST', '/jobs', payload);
    expect([b.status, b.body.error.code]).toEqual([400, 'malformed_body']);
    const brackets = { type: 'echo', payload: { text: '['.repeat(500) } }; // inside a string: fine
    expect((await call('POST', '/jobs', brackets)).status).toBe(201);
  });

  it('answers 500 (a logged deployment error) when the API was built without control-plane adapters', async () => {
    const api = createApiHandler({
      access: allowEveryone(),
      config: testConfig(['echo']),
      catalog,
      store: new FakeJobStore(),
      queue: new FakeJobQueue(),
      scheduler: new FakeJobScheduler(),
      logger: createLogger({ level: 'silent' }),
    });
    const response = await api({
      rawPath: '/jobs',
      headers: {},
      requestContext: { http: { method: 'GET' }, requestId: 'r' },
    } as unknown as APIGatewayProxyEventV2);
    expect(response.statusCode).toBe(500);
    expect(JSON.parse(response.body ?? '{}').error.code).toBe('internal_error');
  });
});

describe('GET /jobs', () => {
  it('validates the query: unknown state, bad limit, unknown parameter, bad cursor', async () => {
    const { call } = setup();
    const cases: [Record<string, string>, string, string][] = [
      [{ state: 'paused' }, 'validation_failed', 'state'],
      [{ limit: '0' }, 'validation_failed', 'limit'],
      [{ limit: '101' }, 'validation_failed', 'limit'],
      [{ limit: '1.5' }, 'validation_failed', 'limit'],
      [{ sort: 'asc' }, 'validation_failed', 'sort'],
      [{ cursor: 'garbage!' }, 'invalid_cursor', 'cursor'],
      [{ createdAfter: 'yesterday' }, 'validation_failed', 'createdAfter'],
      [{ type: 'nope' }, 'unknown_type', 'type'],
    ];
    for (const [query, code, field] of cases) {
      const response = await call('GET', '/jobs', undefined, query);
      expect(response.status, JSON.stringify(query)).toBe(400);
      const { error } = errorSchema.parse(response.body);
      expect(error.code).toBe(code);
      expect(error.issues?.map((i) => i.path)).toContain(field);
    }
    expect(jobPageSchema.parse((await call('GET', '/jobs')).body)).toEqual({ items: [], nextCursor: null });
  });
});

describe('POST /jobs/{id}/cancel and /retry', () => {
  it('cancels a scheduled job and deletes its schedule', async () => {
    const { call, store, scheduler, clock } = setup();
    store.seed(newJob({ id: 'later', type: 'echo', state: 'scheduled' }, T0));
    await scheduler.scheduleJob({
      name: 'later',
      fireAt: T0 + 3600_000,
      queueArn: 'arn',
      message: { v: 1, id: 'later', type: 'echo' },
    });
    clock.set(T0 + 1000);
    const response = await call('POST', '/jobs/later/cancel');
    expect(response.status).toBe(200);
    const job = jobViewSchema.parse(response.body);
    expect(job.state).toBe('cancelled');
    expect(job.finishedAt).toBe(new Date(T0 + 1000).toISOString());
    expect(scheduler.schedules.has('later')).toBe(false);
    expect(store.peek('later')?.expiresAt).toBe(Math.floor((T0 + 1000) / 1000) + 30 * 86_400);
  });

  it('cancels a waiting job (a long sleep) and deletes the schedule that would wake it', async () => {
    const { call, store, scheduler } = setup();
    const name = wakeScheduleName('sleeper', 2);
    store.seed(
      newJob(
        { id: 'sleeper', type: 'echo', state: 'waiting', resumes: 2, runAt: new Date(T0 + 86_400_000).toISOString() },
        T0,
      ),
    );
    await scheduler.scheduleJob({
      name,
      fireAt: T0 + 86_400_000,
      queueArn: 'arn',
      message: { v: 1, id: 'sleeper', type: 'echo' },
    });
    await scheduler.scheduleJob({
      name: wakeScheduleName('sleeper', 1),
      fireAt: T0,
      queueArn: 'arn',
      message: { v: 1, id: 'sleeper', type: 'echo' },
    });
    const response = await call('POST', '/jobs/sleeper/cancel');
    expect(response.status).toBe(200);
    expect(jobViewSchema.parse(response.body).state).toBe('cancelled');
    expect(scheduler.schedules.has(name)).toBe(false);
    // an earlier wait's schedule (already fired) is not this wait's
    expect(scheduler.schedules.has(wakeScheduleName('sleeper', 1))).toBe(true);
  });

  it('answers 409 illegal_state with the current state for a finished job, and 404 for an unknown one', async () => {
    const { call, store } = setup();
    store.seed(newJob({ id: 'done', type: 'echo', state: 'succeeded' }, T0));
    const response = await call('POST', '/jobs/done/cancel');
    expect(response.status).toBe(409);
    expect(response.body.error).toMatchObject({ code: 'illegal_state', state: 'succeeded', jobId: 'done' });
    expect((await call('POST', '/jobs/nope/cancel')).body.error.code).toBe('job_not_found');
    expect((await call('POST', '/jobs/done/retry')).status).toBe(409);
  });

  it('retries a failed job as a new series: queued, attempts 0, retries 1, token and errors kept, message sent', async () => {
    const { call, store, queue } = setup();
    const errors = [{ attempt: 1, at: new Date(T0).toISOString(), reason: 'error', name: 'Error', message: 'boom' }];
    store.seed(
      newJob({ id: 'f', type: 'echo', state: 'failed', attempts: 3, leaseToken: 3, errors, expiresAt: 2e9 }, T0),
    );
    const response = await call('POST', '/jobs/f/retry');
    expect(response.status).toBe(200);
    const job = jobViewSchema.parse(response.body);
    expect(job).toMatchObject({ state: 'queued', attempts: 0, retries: 1, finishedAt: null });
    expect(job.errors).toHaveLength(1);
    expect(store.peek('f')?.leaseToken).toBe(3);
    expect(store.peek('f')?.expiresAt).toBeUndefined();
    expect(queue.sent.map((s) => s.message)).toEqual([{ v: 1, id: 'f', type: 'echo' }]);
  });

  it('undoes the retry when its message cannot be sent, and answers the error', async () => {
    const { call, store, queue } = setup();
    store.seed(newJob({ id: 'c', type: 'echo', state: 'cancelled', finishedAt: new Date(T0).toISOString() }, T0));
    queue.failNext('send', new ThrottledError('AWS throttled SQS SendMessage'));
    const response = await call('POST', '/jobs/c/retry');
    expect(response.status).toBe(429);
    expect(store.peek('c')?.state).toBe('cancelled');
    expect(store.peek('c')?.retries).toBe(0);
  });

  it('keeps a retry whose send failed when the job already moved on (another of its messages was claimed)', async () => {
    const { call, store, queue, control } = setup();
    store.seed(newJob({ id: 'm2', type: 'echo', state: 'failed', attempts: 3, leaseToken: 3 }, T0));
    queue.failNext('send', new ThrottledError('AWS throttled SQS SendMessage'));
    // Between the restart and its undo, a worker claims the restarted job through a stale message.
    const undo = control.undoRestart.bind(control);
    control.undoRestart = async (input) => {
      await store.claim({ id: 'm2', type: 'echo', owner: 'w', now: T0 + 10_000, leaseMs: 30_000 });
      return undo(input);
    };
    const response = await call('POST', '/jobs/m2/retry');
    expect(response.status).toBe(200);
    expect(jobViewSchema.parse(response.body)).toMatchObject({ state: 'running', attempts: 1, retries: 1 });
  });

  it('cancels and retries with one conditional write each, and no read of the job', async () => {
    const { call, store } = setup();
    store.seed(newJob({ id: 'w', type: 'echo', state: 'queued' }, T0));
    expect((await call('POST', '/jobs/w/cancel')).status).toBe(200);
    expect((await call('POST', '/jobs/w/retry')).status).toBe(200);
    expect(store.calls.filter((c) => c.method === 'get')).toEqual([]);
  });

  it('answers 404 for a finished job past its retention that TTL has not deleted yet, and changes nothing', async () => {
    const { call, store, clock, queue } = setup();
    const gone = newJob({ id: 'old', type: 'echo', state: 'failed', expiresAt: Math.floor(T0 / 1000) + 60 }, T0);
    store.seed(gone);
    clock.set(T0 + 61_000);
    for (const action of ['retry', 'cancel']) {
      const response = await call('POST', `/jobs/old/${action}`);
      expect(response.status, action).toBe(404);
      expect(response.body.error.code).toBe('job_not_found');
    }
    expect(store.peek('old')).toMatchObject({ state: 'failed', expiresAt: gone.expiresAt });
    expect(store.peek('old')?.retries).toBeUndefined();
    expect(queue.sent).toEqual([]);
  });

  it('answers 409 type_not_deployed for a retry of a job whose type has no route, and changes nothing', async () => {
    const { call, store } = setup();
    const orphan = newJob({ id: 'o', type: 'gone', state: 'failed', expiresAt: 2e9 }, T0);
    store.seed(orphan);
    const response = await call('POST', '/jobs/o/retry');
    expect(response.status).toBe(409);
    expect(response.body.error).toMatchObject({ code: 'type_not_deployed', jobId: 'o' });
    expect(store.peek('o')?.state).toBe('failed');
  });

  it('a replayed cancel (first response lost) answers 200 and deletes whichever schedule the job may have', async () => {
    const { call, store, scheduler, clock, control } = setup();
    store.seed(newJob({ id: 'r', type: 'echo', state: 'retrying', attempts: 2, leaseToken: 2 }, T0));
    await scheduler.scheduleJob({
      name: retryScheduleName('r', 2),
      fireAt: T0 + 3600_000,
      queueArn: 'arn',
      message: { v: 1, id: 'r', type: 'echo' },
    });
    clock.set(T0 + 1000);
    // The first try is applied but its answer is lost; the SDK's retry finds it applied.
    const cancel = control.cancel.bind(control);
    control.cancel = async (input) => {
      await cancel(input);
      return cancel(input);
    };
    const response = await call('POST', '/jobs/r/cancel');
    expect(response.status).toBe(200);
    expect(jobViewSchema.parse(response.body).state).toBe('cancelled');
    expect(scheduler.schedules.size).toBe(0);
  });

  it('a replayed retry whose send failed cannot be undone: it stands (the supervisor sends it) and answers 200', async () => {
    const { call, store, queue, control } = setup();
    store.seed(newJob({ id: 'x', type: 'echo', state: 'failed', attempts: 3, leaseToken: 3, expiresAt: 2e9 }, T0));
    queue.failNext('send', new ThrottledError('AWS throttled SQS SendMessage'));
    const restart = control.restart.bind(control);
    control.restart = async (input) => {
      await restart(input);
      return restart(input);
    };
    const response = await call('POST', '/jobs/x/retry');
    expect(response.status).toBe(200);
    expect(jobViewSchema.parse(response.body)).toMatchObject({ state: 'queued', retries: 1 });
    expect(store.due('x')?.dueAt).toBeGreaterThan(T0);
  });

  it('logs what describe() says about the payload, never the payload', async () => {
    const { call, store, logs } = setup();
    store.seed(newJob({ id: 'm', type: 'mail', payload: { to: 'a@example.com', secret: 's3cr3t' } }, T0));
    await call('POST', '/jobs/m/cancel');
    const line = logs.find((l) => l.message === 'job cancelled');
    expect(line?.details).toEqual({ domain: 'example.com' });
    expect(JSON.stringify(logs)).not.toContain('s3cr3t');
  });
});

describe('DLQ', () => {
  it('peeks without consuming', async () => {
    const { call, deadLetters } = setup();
    deadLetters.put(DLQ('echo'), '{"v":1,"id":"x","type":"echo"}');
    const first = await call('GET', '/dlq', undefined, { type: 'echo' });
    expect(first.status).toBe(200);
    expect(first.body.messages).toHaveLength(1);
    expect((await call('GET', '/dlq', undefined, { type: 'echo' })).body.messages).toHaveLength(1);
  });

  it('redrives by hand where SQS has no move task: sends first, deletes only what was sent', async () => {
    const { call, deadLetters, config } = setup();
    for (let i = 0; i < 25; i++) deadLetters.put(DLQ('echo'), `{"v":1,"id":"j${i}","type":"echo"}`);
    deadLetters.failSend = (body) => body.includes('"j12"');
    const response = await call('POST', '/dlq/redrive', { type: 'echo' });
    expect(response.status).toBe(200);
    const result = redriveResultSchema.parse(response.body);
    expect(result).toMatchObject({ method: 'receive-send', stoppedBy: 'send_failed' });
    const ready = deadLetters.bodies(config.routes.echo?.queueUrl ?? '');
    const left = deadLetters.bodies(DLQ('echo'));
    // Nothing lost, nothing in both places except what could not be sent.
    expect(ready.length + left.length).toBe(25);
    expect(left).toContain('{"v":1,"id":"j12","type":"echo"}');
    expect(result.method === 'receive-send' && result.moved).toBe(ready.length);
  });

  it('uses the SQS message move task when there is one (202)', async () => {
    const { call, deadLetters } = setup();
    deadLetters.moveTask = { kind: 'started', taskHandle: 'task-1' };
    const response = await call('POST', '/dlq/redrive', { type: 'echo' });
    expect(response.status).toBe(202);
    expect(redriveResultSchema.parse(response.body)).toMatchObject({ method: 'move-task', status: 'started' });
  });

  const OPS = 'arn:aws:sts::123456789012:assumed-role/ops/alice';
  /** `GET /dlq?type=echo`'s body, checked against the documented schema. */
  const peekEcho = async (call: ReturnType<typeof setup>['call']): Promise<{ lastRedrive: unknown }> => {
    const { body } = await call('GET', '/dlq', undefined, { type: 'echo' });
    dlqPeekSchema.parse(body);
    return body;
  };

  it('answers the last redrive of the type: who, when, how and how many moved; null before any', async () => {
    const { call, deadLetters, clock } = setup();
    expect((await peekEcho(call)).lastRedrive).toBeNull();
    for (let i = 0; i < 3; i++) deadLetters.put(DLQ('echo'), `{"v":1,"id":"j${i}","type":"echo"}`);
    clock.set(T0 + 60_000);
    expect((await call('POST', '/dlq/redrive', { type: 'echo' }, {}, OPS)).status).toBe(200);
    expect((await peekEcho(call)).lastRedrive).toEqual({
      by: OPS,
      at: new Date(T0 + 60_000).toISOString(),
      method: 'receive-send',
      moved: 3,
    });
    // one record per type: the other type's DLQ was never redriven
    expect((await call('GET', '/dlq', undefined, { type: 'mail' })).body.lastRedrive).toBeNull();
    // the next redrive replaces it (anonymous: a call with no IAM identity)
    deadLetters.put(DLQ('echo'), '{"v":1,"id":"j9","type":"echo"}');
    clock.set(T0 + 120_000);
    await call('POST', '/dlq/redrive', { type: 'echo' });
    expect((await peekEcho(call)).lastRedrive).toEqual({
      by: 'anonymous',
      at: new Date(T0 + 120_000).toISOString(),
      method: 'receive-send',
      moved: 1,
    });
  });

  it('records a started move task without a count (SQS moves them later), and not one already running', async () => {
    const { call, deadLetters } = setup();
    deadLetters.moveTask = { kind: 'running', taskHandle: 'task-0', moved: 1, toMove: 5 };
    expect((await call('POST', '/dlq/redrive', { type: 'echo' }, {}, OPS)).status).toBe(202);
    expect((await peekEcho(call)).lastRedrive).toBeNull();
    deadLetters.moveTask = { kind: 'started', taskHandle: 'task-1' };
    expect((await call('POST', '/dlq/redrive', { type: 'echo' }, {}, OPS)).status).toBe(202);
    expect((await peekEcho(call)).lastRedrive).toEqual({
      by: OPS,
      at: new Date(T0).toISOString(),
      method: 'move-task',
    });
  });

  it('answers the redrive when its record cannot be written, and logs that it was not recorded', async () => {
    const { call, deadLetters, redrives, logs, config } = setup();
    deadLetters.put(DLQ('echo'), '{"v":1,"id":"j1","type":"echo"}');
    redrives.failRecord = new DependencyError('DynamoDB PutItem (DLQ redrive record) failed');
    const response = await call('POST', '/dlq/redrive', { type: 'echo' }, {}, OPS);
    expect(response).toMatchObject({ status: 200, body: { method: 'receive-send', moved: 1 } });
    expect(deadLetters.bodies(config.routes.echo?.queueUrl ?? '')).toHaveLength(1);
    const warning = logs.find((line) => line.message === 'could not record the DLQ redrive');
    expect(warning).toMatchObject({ level: 'warn', type: 'echo', by: OPS, method: 'receive-send' });
    // the audit's log line stands
    expect(logs.find((line) => line.message === 'operator action')).toMatchObject({ action: 'dlq.redrive', by: OPS });
    expect((await peekEcho(call)).lastRedrive).toBeNull();
  });

  it('records no redrive that moved nothing (an empty DLQ), nor one that failed', async () => {
    const { call, deadLetters } = setup();
    expect((await call('POST', '/dlq/redrive', { type: 'echo' }, {}, OPS)).body).toMatchObject({ moved: 0 });
    deadLetters.put(DLQ('echo'), '{"v":1,"id":"j1","type":"echo"}');
    deadLetters.sendAll = async () => {
      throw new DependencyError('SQS SendMessageBatch failed');
    };
    expect((await call('POST', '/dlq/redrive', { type: 'echo' }, {}, OPS)).status).toBe(503);
    expect((await peekEcho(call)).lastRedrive).toBeNull();
  });
});

describe('describe(payload)', () => {
  it('is logged by the worker when an attempt starts, instead of the payload', async () => {
    const spec = defineJobType({
      type: 'echo',
      payload: z.object({ n: z.number() }),
      describe: (p) => ({ n: p.n }),
    });
    const h = harness({ spec });
    h.store.seed(echoJob('j1', { payload: { n: 7 } }));
    await h.worker({ Records: [messageFor('j1')] });
    const started = h.logs.find((l) => l.message === 'attempt started');
    expect(started?.details).toEqual({ n: 7 });
    expect(started).not.toHaveProperty('payload');
  });

  it('never throws and never logs more than a small object', () => {
    expect(describeJob(undefined, { secret: 1 })).toEqual({});
    const throwing = {
      describe: () => {
        throw new Error('x');
      },
    };
    expect(describeJob(throwing, {})).toEqual({ details: '(describe threw)' });
    const huge = { describe: () => ({ blob: 'x'.repeat(5000) }) };
    expect(String(describeJob(huge, {}).details)).toMatch(/limit/);
  });

  it('must be a function', () => {
    expect(() =>
      defineJobType({ type: 'x', payload: z.object({}), describe: 'nope' as unknown as () => Record<string, unknown> }),
    ).toThrow(ConfigError);
  });
});
