/**
 * The API's enqueue hands a keyed job's message on in its SQS message group (fair queues): a
 * single enqueue (SendMessage) and a batch (SendMessageBatch entries) alike, and an operator's
 * retry. A type with `sqsFairQueue: false`, and a type without a key, send none. Nothing is read
 * or written for it: the store sees the same calls.
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { allowEveryone } from '../../shared/api/access';
import { createApiHandler } from '../../shared/api/handler';
import { ManualClock } from '../../shared/core/clock';
import { defineJobType } from '../../shared/core/job-type';
import { createLogger } from '../../shared/logger';
import { FakeDeadLetterQueues, FakeJobControl, FakeRedriveLog } from '../support/control-fakes';
import { FakeJobQueue, FakeJobScheduler, FakeJobStore, newJob, testConfig } from '../support/fakes';

const payload = z.object({ tenant: z.string() });
const catalog = [
  defineJobType({ type: 'tenant-sync', payload, concurrency: [{ limit: 2, key: (p) => p.tenant }, { limit: 20 }] }),
  defineJobType({
    type: 'quiet-sync',
    payload,
    concurrency: [{ limit: 2, key: (p) => p.tenant }],
    sqsFairQueue: false,
  }),
  defineJobType({ type: 'echo', payload }),
];

function setup() {
  const store = new FakeJobStore();
  const queue = new FakeJobQueue();
  const control = new FakeJobControl(store);
  const api = createApiHandler({
    access: allowEveryone(),
    config: testConfig(catalog.map((spec) => spec.type)),
    catalog,
    store,
    queue,
    scheduler: new FakeJobScheduler(),
    clock: new ManualClock(Date.parse('2026-06-01T00:00:00Z')),
    logger: createLogger({ level: 'silent' }),
    controlPlane: {
      index: { query: async () => ({ entries: [], more: false }) },
      control,
      deadLetters: new FakeDeadLetterQueues(),
      redrives: new FakeRedriveLog(),
    },
  });
  const call = async (path: string, body: unknown) => {
    const response = await api({
      version: '2.0',
      routeKey: '$default',
      rawPath: path,
      rawQueryString: '',
      headers: { 'content-type': 'application/json' },
      requestContext: { http: { method: 'POST', path }, requestId: 'req-1' },
      isBase64Encoded: false,
      body: JSON.stringify(body),
    } as unknown as APIGatewayProxyEventV2);
    return response.statusCode;
  };
  const groups = () => Object.fromEntries(queue.sent.map((s) => [s.message.id, s.groupId]));
  return { call, queue, store, groups };
}

describe("the enqueue sends a keyed job's message in its group", () => {
  it('on a single enqueue, by the first keyed concurrency key (`concurrencyKey` when given)', async () => {
    const { call, groups, queue } = setup();
    expect(await call('/jobs', { id: 'a', type: 'tenant-sync', payload: { tenant: 'acme' } })).toBe(201);
    expect(
      await call('/jobs', { id: 'b', type: 'tenant-sync', payload: { tenant: 'x' }, concurrencyKey: 'Zürich' }),
    ).toBe(201);
    expect(queue.batches).toEqual([]);
    expect(groups()).toEqual({ a: 'tenant-sync:acme', b: expect.stringMatching(/^tenant-sync#[\w-]{43}$/) });
  });

  it('on every entry of a batch (SendMessageBatch), and on none of a type opted out or without a key', async () => {
    const { call, groups, queue } = setup();
    const jobs = [
      { id: 'b1', type: 'tenant-sync', payload: { tenant: 'acme' } },
      { id: 'b2', type: 'tenant-sync', payload: { tenant: 'globex' } },
      { id: 'b3', type: 'quiet-sync', payload: { tenant: 'acme' } },
      { id: 'b4', type: 'echo', payload: { tenant: 'acme' } },
    ];
    expect(await call('/jobs/batch', { jobs })).toBe(200);
    expect(queue.batches.flatMap((b) => b.ids).sort()).toEqual(['b1', 'b2', 'b3', 'b4']);
    expect(groups()).toEqual({ b1: 'tenant-sync:acme', b2: 'tenant-sync:globex', b3: undefined, b4: undefined });
  });

  it("on an operator's retry", async () => {
    const { call, groups, store } = setup();
    store.seed(newJob({ id: 'r1', type: 'tenant-sync', state: 'failed', flowKeys: ['acme', '*'] }));
    expect(await call('/jobs/r1/retry', {})).toBe(200);
    expect(groups()).toEqual({ r1: 'tenant-sync:acme' });
  });

  it('reads and writes nothing more for it', async () => {
    const keyed = setup();
    const opted = setup();
    await keyed.call('/jobs', { id: 'a', type: 'tenant-sync', payload: { tenant: 'acme' } });
    await opted.call('/jobs', { id: 'a', type: 'quiet-sync', payload: { tenant: 'acme' } });
    expect(keyed.store.calls.map((c) => c.method)).toEqual(opted.store.calls.map((c) => c.method));
  });
});
