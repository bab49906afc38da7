/**
 * `ctx.emit` and `ctx.waitForEvent` through the testing kit's in-memory platform and its client:
 * one job waits for `order.paid` of its order, another emits it; the waiter resumes with the
 * event, the subscriber gets its job once, and a signal under a wait's reserved name is refused.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { defineEvent, subscribe } from '../../shared/core/events';
import { defineJobType } from '../../shared/core/job-type';
import { defineJob } from '../../shared/runtime/define-job';
import { createTestPlatform, type TestPlatform } from '../local-aws/testing';

const orderPaid = defineEvent('order.paid', z.object({ orderId: z.string(), amount: z.number() }), {
  matchOn: ['orderId'],
});
const billSpec = defineJobType({
  type: 'bill',
  payload: z.object({ orderId: z.string(), amount: z.number() }),
  on: [subscribe(orderPaid)],
});
const paySpec = defineJobType({ type: 'pay', payload: z.object({ orderId: z.string() }) });
const fulfilSpec = defineJobType({ type: 'fulfil', payload: z.object({ orderId: z.string() }) });
const specs = { bill: billSpec, pay: paySpec, fulfil: fulfilSpec };
const billed: unknown[] = [];

const jobs = [
  defineJob(billSpec, async (p) => {
    billed.push(p);
    return { billed: p.orderId };
  }),
  defineJob(paySpec, async (p, ctx) => ctx.emit(orderPaid, { orderId: p.orderId, amount: 9 })),
  defineJob(fulfilSpec, async (p, ctx) => {
    const paid = await ctx.waitForEvent(orderPaid, { match: { 'data.orderId': p.orderId }, timeout: '1d' });
    return { paid: paid?.data ?? null };
  }),
];

let platform: TestPlatform;

beforeAll(async () => {
  platform = await createTestPlatform({ jobs, mode: 'memory', logLevel: 'silent' });
});

afterAll(async () => {
  await platform?.stop();
});

it('a job that waits for an event resumes with the one another job emits; the subscriber runs once', async () => {
  const orrery = platform.client(specs);
  await orrery.enqueue('fulfil', { orderId: 'o1' }, { id: 'fulfil-o1' });
  await platform.runUntilIdle();
  expect((await orrery.get('fulfil-o1')).state).toBe('waiting');
  await orrery.enqueue('pay', { orderId: 'o1' }, { id: 'pay-o1' });
  await platform.runUntilIdle();
  expect(await orrery.get('fulfil-o1')).toMatchObject({
    state: 'succeeded',
    result: { paid: { orderId: 'o1', amount: 9 } },
  });
  expect(billed).toEqual([{ orderId: 'o1', amount: 9 }]);
  const pay = await orrery.get('pay-o1');
  expect(pay).toMatchObject({ state: 'succeeded', result: { id: expect.stringMatching(/^em\.[0-9a-f]{40}$/) } });
});

it('refuses a signal sent under an event wait’s reserved name (400 reserved_signal)', async () => {
  const orrery = platform.client(specs);
  await orrery.enqueue('fulfil', { orderId: 'o2' }, { id: 'fulfil-o2' });
  await platform.runUntilIdle();
  const refused = await orrery.signal('fulfil-o2', 'event:order.paid', { id: 'x', name: 'order.paid', data: {} }).then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(refused).toMatchObject({ status: 400, code: 'reserved_signal' });
  expect((await orrery.get('fulfil-o2')).state).toBe('waiting');
});
