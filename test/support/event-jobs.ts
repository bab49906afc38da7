/**
 * Job types that subscribe to events, for the tests of `POST /events` through the testing kit
 * (test/unit/events-memory.test.ts in memory, test/integration/events.test.ts on local AWS):
 * two types on `order.placed` (one with a filter and a payload of its own), one on
 * `user.signed-up`.
 */
import * as z from 'zod/mini';
import { defineEvent, subscribe } from '../../shared/core/events';
import { defineJobType } from '../../shared/core/job-type';
import { defineJob } from '../../shared/runtime/define-job';

export const orderPlaced = defineEvent('order.placed', z.object({ orderId: z.string(), total: z.number() }));
export const userSignedUp = defineEvent('user.signed-up', z.object({ email: z.string() }));

export const receiptJob = defineJobType({
  type: 'send-receipt',
  payload: z.object({ orderId: z.string() }),
  on: [subscribe(orderPlaced, { filter: (d) => d.total > 0, payload: (d) => ({ orderId: d.orderId }) })],
});
export const billJob = defineJobType({
  type: 'bill-order',
  payload: z.object({ orderId: z.string(), total: z.number() }),
  on: [subscribe(orderPlaced)],
});
export const welcomeJob = defineJobType({
  type: 'welcome',
  payload: z.object({ email: z.string() }),
  on: [subscribe(userSignedUp)],
});
export const eventSpecs = { 'send-receipt': receiptJob, 'bill-order': billJob, welcome: welcomeJob };

/** The payloads each type's handler ran with, in order. */
export const ran: Record<string, unknown[]> = { 'send-receipt': [], 'bill-order': [], welcome: [] };

export const eventJobs = [
  defineJob(receiptJob, async (p) => {
    ran['send-receipt']?.push(p);
    return { sent: p.orderId };
  }),
  defineJob(billJob, async (p) => {
    ran['bill-order']?.push(p);
    return { billed: p.total };
  }),
  defineJob(welcomeJob, async (p) => {
    ran.welcome?.push(p);
    return { welcomed: p.email };
  }),
];
