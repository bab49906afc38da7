/**
 * POST /events against the guarantees of docs/events.md, from an independent review: each test
 * states one guarantee (each failed before its fix).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { accessFrom } from '../../shared/api/access';
import { createApiHandler } from '../../shared/api/handler';
import { ManualClock } from '../../shared/core/clock';
import { defineEvent, eventJobId, subscribe } from '../../shared/core/events';
import type { Job } from '../../shared/core/job';
import { defineJobType } from '../../shared/core/job-type';
import { DependencyError } from '../../shared/errors';
import { createLogger } from '../../shared/logger';
import { FakeDebouncer, FakePacer } from '../local-aws/memory-flow';
import { callApi } from '../support/api-call';
import { FakeJobQueue, FakeJobScheduler, FakeJobStore, testConfig } from '../support/fakes';

const T0 = Date.parse('2026-06-01T00:00:00.000Z');
const ADMIN = 'arn:aws:iam::123456789012:role/admin';
const BILLING = 'arn:aws:iam::123456789012:role/billing';

const orderPlaced = defineEvent('order.placed', z.object({ orderId: z.string(), region: z.string().optional() }));
const orderPaid = defineEvent('order.paid', z.object({ orderId: z.string() }));

const needRegion = (p: { region?: string }): string => {
  if (!p.region) throw new Error('no region');
  return p.region;
};

const catalog = [
  defineJobType({
    type: 'audit',
    payload: z.object({ orderId: z.string() }),
    on: [
      subscribe(orderPlaced, { payload: (d) => ({ orderId: d.orderId }) }),
      subscribe(orderPaid, { payload: (d) => ({ orderId: d.orderId }) }),
    ],
  }),
  defineJobType({
    type: 'bill-order',
    payload: z.object({ orderId: z.string(), region: z.string().optional() }),
    on: [subscribe(orderPlaced)],
  }),
  defineJobType({
    type: 'regional-limit',
    payload: z.object({ orderId: z.string(), region: z.string().optional() }),
    rateLimit: { limit: 100, periodSeconds: 60, key: needRegion },
    on: [subscribe(orderPlaced)],
  }),
  defineJobType({
    type: 'regional-digest',
    payload: z.object({ orderId: z.string(), region: z.string().optional() }),
    debounce: { periodSeconds: 30, key: needRegion },
    on: [subscribe(orderPlaced)],
  }),
];

class FlakyStore extends FakeJobStore {
  failId: string | undefined;
  override async create(job: Job) {
    if (job.id === this.failId) throw new DependencyError('DynamoDB throttled this put');
    return super.create(job);
  }
}

function setup(types = catalog) {
  const store = new FlakyStore();
  const queue = new FakeJobQueue();
  const api = createApiHandler({
    access: accessFrom({
      v: 1,
      principals: {
        [ADMIN]: [{ action: 'admin' }],
        [BILLING]: [{ action: 'enqueue', types: ['bill-order'] }],
      },
    }),
    config: testConfig(types.map((t) => t.type)),
    catalog: types,
    store,
    queue,
    scheduler: new FakeJobScheduler(),
    clock: new ManualClock(T0),
    pacer: new FakePacer(),
    debouncer: new FakeDebouncer(),
    logger: createLogger({ level: 'silent' }),
  });
  const call = (method: string, path: string, body?: unknown, as = ADMIN) => callApi(api, { method, path, body, as });
  return { call, store, queue };
}

describe('events review: "Nothing bad is written" (the whole request is checked before any write)', () => {
  it('a rate-limit key the payload cannot give is a 400 before any job is written', async () => {
    const { call, store, queue } = setup(catalog.filter((t) => t.type !== 'regional-digest'));
    const out = await call('POST', '/events', { name: 'order.placed', id: 'o1', data: { orderId: 'o1' } });
    expect(out.status).toBe(400);
    expect(out.body.error.code).toBe('invalid_rate_limit_key');
    // docs: any 400 writes nothing
    expect({ stored: store.all().map((j) => j.type), sent: queue.sent.length }).toEqual({ stored: [], sent: 0 });
  });

  it('a debounce key the payload cannot give is a 400 before any job is written', async () => {
    const { call, store, queue } = setup(catalog.filter((t) => t.type !== 'regional-limit'));
    const out = await call('POST', '/events', { name: 'order.placed', id: 'o2', data: { orderId: 'o2' } });
    expect(out.status).toBe(400);
    expect(out.body.error.code).toBe('invalid_debounce_key');
    expect({ stored: store.all().map((j) => j.type), sent: queue.sent.length }).toEqual({ stored: [], sent: 0 });
  });
});

describe('events review: "409 ... the other jobs are written"', () => {
  it('a dependency failure answers ahead of a conflict (a 409 says not to send again, and the job it left unwritten would never be made)', async () => {
    const types = catalog.filter((t) => t.type === 'audit' || t.type === 'bill-order');
    const { call, store } = setup(types);
    // the event was sent before with other data: audit's job was written, bill-order's write failed
    store.failId = eventJobId('order.placed', 'o3', 'bill-order');
    const first = await call('POST', '/events', { name: 'order.placed', id: 'o3', data: { orderId: 'other' } });
    expect(first.status).toBe(503);
    // sent again with this data: audit's job conflicts (409), bill-order's write fails again
    const out = await call('POST', '/events', { name: 'order.placed', id: 'o3', data: { orderId: 'o3' } });
    expect(out.status).toBe(503);
    expect(out.body.error.code).toBe('dependency_failed');
    expect(store.peek(eventJobId('order.placed', 'o3', 'bill-order'))).toBeUndefined();
  });
});

describe('events review: "One job per subscribed type, made once"', () => {
  it('two events sent under one id are two events: a type subscribed to both gets a job of each', async () => {
    const { call, store } = setup(catalog.filter((t) => t.type === 'audit' || t.type === 'bill-order'));
    const placed = await call('POST', '/events', { name: 'order.placed', id: 'order-9', data: { orderId: '9' } });
    expect(placed.status).toBe(200);
    const paid = await call('POST', '/events', { name: 'order.paid', id: 'order-9', data: { orderId: '9' } });
    expect(paid.status).toBe(200);
    expect(paid.body.jobs.map((j: { type: string; status: string }) => [j.type, j.status])).toEqual([
      ['audit', 'created'],
    ]);
    expect(store.all().filter((j) => j.type === 'audit')).toHaveLength(2);
    const both = await call('GET', '/events/order-9');
    expect(both.body.jobs.map((j: { name: string; type: string }) => [j.name, j.type])).toEqual([
      ['order.placed', 'audit'],
      ['order.placed', 'bill-order'],
      ['order.paid', 'audit'],
    ]);
  });

  it("no caller can take an event's job id first: POST /jobs refuses the shape (400 reserved_id), and the event makes its job", async () => {
    const { call, store } = setup(catalog.filter((t) => t.type === 'audit' || t.type === 'bill-order'));
    const id = eventJobId('order.placed', 'order-10', 'bill-order');
    const squat = await call(
      'POST',
      '/jobs',
      { type: 'bill-order', id, payload: { orderId: '10' }, delaySeconds: 86_400 },
      BILLING,
    );
    expect(squat.status).toBe(400);
    expect(squat.body.error.code).toBe('reserved_id');
    const batch = await call('POST', '/jobs/batch', { jobs: [{ type: 'bill-order', id, payload: { orderId: '10' } }] });
    expect(batch.body.results[0].error.code).toBe('reserved_id');
    expect(store.peek(id)).toBeUndefined();
    const out = await call('POST', '/events', { name: 'order.placed', id: 'order-10', data: { orderId: '10' } });
    expect(out.status).toBe(200);
    expect(out.body.jobs.find((j: { type: string }) => j.type === 'bill-order').status).toBe('created');
    expect(store.peek(id)?.enqueuedBy).toBe(ADMIN);
  });
});

describe('events review: issues of a 4xx', () => {
  it('a subscriber in the catalog but not deployed is a fault of the deployment (500), not a 400 blaming the data', async () => {
    const types = catalog.filter((t) => t.type === 'audit' || t.type === 'bill-order');
    const store = new FakeJobStore();
    const api = createApiHandler({
      access: accessFrom({ v: 1, principals: { [ADMIN]: [{ action: 'admin' }] } }),
      config: testConfig(['audit']),
      catalog: types,
      store,
      queue: new FakeJobQueue(),
      scheduler: new FakeJobScheduler(),
      clock: new ManualClock(T0),
      logger: createLogger({ level: 'silent' }),
    });
    const out = await callApi(api, {
      method: 'POST',
      path: '/events',
      body: { name: 'order.placed', id: 'o5', data: { orderId: 'o5' } },
      as: ADMIN,
    });
    // a deployment fault, not a fault of the event's data (before: 400 unknown_type on `data`, listing the deployed types)
    expect(out.status).toBe(500);
    expect(out.body.error.code).toBe('internal_error');
    expect(JSON.stringify(out.body)).not.toContain('must be one of');
    expect(store.all()).toEqual([]);
  });

  it('a payload over the limit in a batch answers 413 naming the event', async () => {
    const { call } = setup(catalog.filter((t) => t.type === 'bill-order'));
    const big = { name: 'order.placed', id: 'b2', data: { orderId: 'x'.repeat(300_000) } };
    const out = await call('POST', '/events', {
      events: [{ name: 'order.placed', id: 'b1', data: { orderId: 'ok' } }, big],
    });
    expect(out.status).toBe(413);
    expect(JSON.stringify(out.body)).toContain('events.1');
  });
});
