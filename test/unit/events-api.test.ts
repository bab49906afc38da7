/**
 * `POST /events` and `GET /events/{id}` on the in-memory fakes: an event makes one job per
 * subscribed type (filters and payload mappings applied), a replay makes nothing new, any bad
 * event is a 400 that writes nothing, and access is `enqueue` on every subscribing type.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { accessFrom } from '../../shared/api/access';
import { eventBatchViewSchema, eventJobsSchema, eventViewSchema } from '../../shared/api/events-service';
import { createApiHandler } from '../../shared/api/handler';
import { ManualClock } from '../../shared/core/clock';
import { defineEvent, eventJobId, subscribe } from '../../shared/core/events';
import { defineJobType } from '../../shared/core/job-type';
import { createLogger } from '../../shared/logger';
import { callApi } from '../support/api-call';
import { FakeJobQueue, FakeJobScheduler, FakeJobStore, testConfig } from '../support/fakes';

const T0 = Date.parse('2026-06-01T00:00:00.000Z');
const ADMIN = 'arn:aws:iam::123456789012:role/admin';
const BILLING = 'arn:aws:iam::123456789012:role/billing';

const orderPlaced = defineEvent('order.placed', z.object({ orderId: z.string(), total: z.number() }));
const userSignedUp = defineEvent('user.signed-up', z.object({ email: z.email() }));

const catalog = [
  defineJobType({
    type: 'send-receipt',
    payload: z.object({ orderId: z.string() }).strict(),
    on: [subscribe(orderPlaced, { filter: (d) => d.total > 0, payload: (d) => ({ orderId: d.orderId }) })],
  }),
  defineJobType({
    type: 'bill-order',
    payload: z.object({ orderId: z.string(), total: z.number().positive() }),
    on: [subscribe(orderPlaced)],
  }),
  defineJobType({
    type: 'welcome',
    payload: z.object({ email: z.string(), source: z.string() }),
    on: [subscribe(userSignedUp, { payload: (d, e) => ({ email: d.email, source: e.name }) })],
  }),
  defineJobType({ type: 'plain', payload: z.object({}) }),
];

function setup() {
  const store = new FakeJobStore();
  const queue = new FakeJobQueue();
  const api = createApiHandler({
    access: accessFrom({
      v: 1,
      principals: {
        [ADMIN]: [{ action: 'admin' }],
        [BILLING]: [
          { action: 'enqueue', types: ['bill-order'] },
          { action: 'read', types: ['bill-order'] },
        ],
      },
    }),
    config: testConfig(['send-receipt', 'bill-order', 'welcome', 'plain']),
    catalog,
    store,
    queue,
    scheduler: new FakeJobScheduler(),
    clock: new ManualClock(T0),
    logger: createLogger({ level: 'silent' }),
  });
  const call = (method: string, path: string, body?: unknown, as = ADMIN) => callApi(api, { method, path, body, as });
  return { call, store, queue };
}

describe('POST /events', () => {
  it('makes one job per subscribed type, with the payload each subscription makes, and sends each', async () => {
    const { call, store, queue } = setup();
    const out = await call('POST', '/events', {
      name: 'order.placed',
      id: 'ord-1',
      data: { orderId: 'o1', total: 12 },
    });
    expect(out.status).toBe(200);
    expect(eventViewSchema.parse(out.body)).toEqual({
      id: 'ord-1',
      name: 'order.placed',
      jobs: [
        {
          type: 'send-receipt',
          id: eventJobId('order.placed', 'ord-1', 'send-receipt'),
          status: 'created',
          state: 'queued',
        },
        {
          type: 'bill-order',
          id: eventJobId('order.placed', 'ord-1', 'bill-order'),
          status: 'created',
          state: 'queued',
        },
      ],
    });
    expect((await store.get(eventJobId('order.placed', 'ord-1', 'send-receipt')))?.payload).toEqual({ orderId: 'o1' });
    expect((await store.get(eventJobId('order.placed', 'ord-1', 'bill-order')))?.payload).toEqual({
      orderId: 'o1',
      total: 12,
    });
    expect(queue.sent.map((m) => m.message.id).sort()).toEqual(
      [eventJobId('order.placed', 'ord-1', 'send-receipt'), eventJobId('order.placed', 'ord-1', 'bill-order')].sort(),
    );
  });

  it('sent again with the same id makes nothing new (a job still queued is sent again, as a POST /jobs replay does)', async () => {
    const { call, store } = setup();
    const event = { name: 'order.placed', id: 'ord-2', data: { orderId: 'o2', total: 5 } };
    expect((await call('POST', '/events', event)).status).toBe(200);
    const jobs = store.all().length;
    const again = await call('POST', '/events', event);
    expect(again.status).toBe(200);
    expect(again.body.jobs.map((j: { status: string }) => j.status)).toEqual(['existing', 'existing']);
    expect(store.all().length).toBe(jobs);
  });

  it("a filter that turns the event down makes no job of that type; the event's own payload reaches the others", async () => {
    const { call, store } = setup();
    const out = await call('POST', '/events', { name: 'order.placed', id: 'ord-0', data: { orderId: 'o0', total: 0 } });
    // send-receipt's filter wants a total above 0; bill-order has no filter, and its payload refuses 0
    expect(out.status).toBe(400);
    expect(out.body.error.code).toBe('invalid_payload');
    expect(out.body.error.issues).toEqual([expect.objectContaining({ path: 'data.total' })]);
    expect(await store.get(eventJobId('order.placed', 'ord-0', 'send-receipt'))).toBeUndefined();
    expect(await store.get(eventJobId('order.placed', 'ord-0', 'bill-order'))).toBeUndefined();
  });

  it('a mapping gets the event: its name reaches the payload', async () => {
    const { call, store } = setup();
    const out = await call('POST', '/events', { name: 'user.signed-up', id: 'u1', data: { email: 'a@b.co' } });
    expect(out.status).toBe(200);
    expect((await store.get(eventJobId('user.signed-up', 'u1', 'welcome')))?.payload).toEqual({
      email: 'a@b.co',
      source: 'user.signed-up',
    });
  });

  it('draws an id when none is given', async () => {
    const { call } = setup();
    const out = await call('POST', '/events', { name: 'user.signed-up', data: { email: 'a@b.co' } });
    expect(out.status).toBe(200);
    expect(out.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(out.body.jobs[0].id).toBe(eventJobId('user.signed-up', out.body.id, 'welcome'));
  });

  it('a batch answers each event in order; one bad event refuses the whole batch and writes nothing', async () => {
    const { call, store } = setup();
    const good = { name: 'user.signed-up', id: 'u2', data: { email: 'a@b.co' } };
    const bad = { name: 'user.signed-up', id: 'u3', data: { email: 'not an email' } };
    const refused = await call('POST', '/events', { events: [good, bad] });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('invalid_event_data');
    expect(refused.body.error.issues).toEqual([expect.objectContaining({ path: 'events.1.data.email' })]);
    expect(await store.get(eventJobId('user.signed-up', 'u2', 'welcome'))).toBeUndefined();
    const ok = await call('POST', '/events', {
      events: [good, { name: 'order.placed', id: 'ord-3', data: { orderId: 'o3', total: 1 } }],
    });
    expect(ok.status).toBe(200);
    const body = eventBatchViewSchema.parse(ok.body);
    expect(body.events.map((e) => [e.id, e.jobs.length])).toEqual([
      ['u2', 1],
      ['ord-3', 2],
    ]);
  });

  it.each([
    [{ name: 'order.shipped', data: {} }, 'unknown_event', 'name'],
    [{ name: 'order.placed', data: { orderId: 'o', total: 'x' } }, 'invalid_event_data', 'data.total'],
    [{ name: 'order.placed', data: [] }, 'validation_failed', 'data'],
    [{ name: 'bad name!', data: {} }, 'validation_failed', 'name'],
    [{ name: 'order.placed', id: '-x', data: {} }, 'validation_failed', 'id'],
    [{ name: 'order.placed', data: {}, extra: 1 }, 'validation_failed', 'extra'],
  ])('refuses %j with 400 %s naming %s, and writes nothing', async (body, code, path) => {
    const { call, store, queue } = setup();
    const out = await call('POST', '/events', body);
    expect(out.status).toBe(400);
    expect(out.body.error.code).toBe(code);
    expect(out.body.error.issues.map((i: { path: string }) => i.path)).toContain(path);
    expect(store.all().length).toBe(0);
    expect(queue.sent).toEqual([]);
  });

  it('refuses an id twice in one batch (400 duplicate_event), and a batch of none or of more than 100', async () => {
    const { call } = setup();
    const e = { name: 'user.signed-up', id: 'same', data: { email: 'a@b.co' } };
    const twice = await call('POST', '/events', { events: [e, e] });
    expect(twice.status).toBe(400);
    expect(twice.body.error.code).toBe('duplicate_event');
    expect((await call('POST', '/events', { events: [] })).status).toBe(400);
    const many = Array.from({ length: 101 }, (_, i) => ({ ...e, id: `e${i}` }));
    expect((await call('POST', '/events', { events: many })).status).toBe(400);
  });

  it('answers 409 when the id was sent before with other data, and a job of it has another payload', async () => {
    const { call } = setup();
    expect(
      (await call('POST', '/events', { name: 'user.signed-up', id: 'u9', data: { email: 'a@b.co' } })).status,
    ).toBe(200);
    const other = await call('POST', '/events', { name: 'user.signed-up', id: 'u9', data: { email: 'c@d.co' } });
    expect(other.status).toBe(409);
  });

  it('needs enqueue on every type that subscribes to the event (403 naming one not granted), and writes nothing when refused', async () => {
    const { call, store } = setup();
    const out = await call('POST', '/events', { name: 'order.placed', data: { orderId: 'o', total: 1 } }, BILLING);
    expect(out.status).toBe(403);
    expect(out.body.error).toMatchObject({ code: 'forbidden', action: 'enqueue', type: 'send-receipt' });
    expect(store.all().length).toBe(0);
  });
});

describe('GET /events/{id}', () => {
  it('lists the jobs the event made, with their states; only the types the caller may read', async () => {
    const { call } = setup();
    await call('POST', '/events', { name: 'order.placed', id: 'ord-5', data: { orderId: 'o5', total: 3 } });
    const all = await call('GET', '/events/ord-5');
    expect(all.status).toBe(200);
    expect(eventJobsSchema.parse(all.body).jobs.map((j) => [j.type, j.state])).toEqual([
      ['send-receipt', 'queued'],
      ['bill-order', 'queued'],
    ]);
    const billing = await call('GET', '/events/ord-5', undefined, BILLING);
    expect(billing.body.jobs.map((j: { type: string }) => j.type)).toEqual(['bill-order']);
  });

  it('answers 404 event_not_found for an event that made no job', async () => {
    const { call } = setup();
    const out = await call('GET', '/events/nothing-here');
    expect(out.status).toBe(404);
    expect(out.body.error.code).toBe('event_not_found');
  });
});
