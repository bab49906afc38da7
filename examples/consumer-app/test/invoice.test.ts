/**
 * The `invoice` handler on local AWS, through Orrery's own API, queue runner and worker:
 * DynamoDB Local, an in-process SQS and a Scheduler stand-in, all started by this file.
 */
import { createClient, ValidationFailed } from 'orrery-jobs/client';
import {
  type LocalAws,
  type LocalPlatform,
  startLocalAws,
  startLocalPlatform,
  uniquePrefix,
} from 'orrery-jobs/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { invoiceJob } from '../jobs/catalog.ts';
import { invoice } from '../jobs/invoice.ts';

let aws: LocalAws | undefined;
let platform: LocalPlatform | undefined;

beforeAll(async () => {
  aws = await startLocalAws();
  platform = await startLocalPlatform({ aws, prefix: uniquePrefix('invoice'), jobs: [invoice] });
});

afterAll(async () => {
  await platform?.stop();
  await aws?.stop();
});

function orrery() {
  if (!platform) throw new Error('the local platform did not start');
  return createClient({ url: platform.url, jobs: { invoice: invoiceJob } });
}

it('totals an order', async () => {
  const { job } = await orrery().enqueue('invoice', {
    orderId: 'o-1',
    currency: 'EUR',
    lines: [
      { description: 'Tea', quantity: 3, unitCents: 450 },
      { description: 'Cups', quantity: 2, unitCents: 1_200 },
    ],
  });
  const done = await orrery().waitFor(job.id, 'succeeded', { timeout: 30_000, interval: 200 });
  expect(done.result).toEqual({ invoiceNumber: 'INV-o-1', currency: 'EUR', totalCents: 3_750 });
  expect(done.attempts).toBe(1);
});

it('fails an order worth nothing at once, without retries', async () => {
  const { job } = await orrery().enqueue('invoice', {
    orderId: 'o-2',
    currency: 'USD',
    lines: [{ description: 'Sample', quantity: 1, unitCents: 0 }],
  });
  const failed = await orrery().waitFor(job.id, 'failed', { timeout: 30_000, interval: 200 });
  expect(failed.attempts).toBe(1);
  expect(failed.lastError).toMatchObject({ name: 'PermanentError', message: 'order o-2 has nothing to invoice' });
});

it('refuses a payload its schema rejects, before anything is written', async () => {
  const untyped = createClient({ url: orrery().url });
  const enqueue = untyped.enqueue('invoice', { orderId: 'o-3', currency: 'JPY', lines: [] });
  await expect(enqueue).rejects.toBeInstanceOf(ValidationFailed);
  await expect(enqueue).rejects.toMatchObject({ status: 400, code: 'invalid_payload' });
});
