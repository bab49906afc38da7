/**
 * The `invoice` handler through Orrery's own API and worker, with the same assertions in both
 * modes of `orrery-jobs/testing`:
 *
 * - `memory`: the production API and worker on the in-memory ports that pass the DynamoDB
 *   adapters' contract suites, with an in-process loop for SQS and Lambda. Milliseconds a test,
 *   nothing to start: this proves the app's own logic.
 * - `local-aws`: the same code on DynamoDB Local, an in-process SQS (fauxqs) and a Scheduler
 *   stand-in, started by the platform (Java 17+). This proves what the fakes cannot: the job, its
 *   payload and its result marshalled through DynamoDB and SQS, and the emulators' behaviour.
 */
import { ValidationFailed } from 'orrery-jobs/client';
import { createTestPlatform, type TestPlatform, type TestPlatformMode } from 'orrery-jobs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { invoice } from '../jobs/invoice.ts';

const modes: readonly TestPlatformMode[] = ['memory', 'local-aws'];

describe.each(modes)('%s', (mode) => {
  let platform: TestPlatform | undefined;

  beforeAll(async () => {
    platform = await createTestPlatform({ jobs: [invoice], mode });
  });

  afterAll(async () => {
    await platform?.stop();
  });

  function started(): TestPlatform {
    if (!platform) throw new Error(`the ${mode} platform did not start`);
    return platform;
  }

  /** Typed by the definition: payloads by the spec's schema, results by what the handler returns. */
  function orrery() {
    return started().client({ invoice });
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
    await started().runUntilIdle();
    // throws at once if the job ended in another state; `done.result` has the handler's result type
    const done = await orrery().waitFor(job.id, 'succeeded', { type: 'invoice', timeout: 30_000, interval: 200 });
    expect(done.result).toEqual({ invoiceNumber: 'INV-o-1', currency: 'EUR', totalCents: 3_750 });
    expect(done.result.totalCents).toBe(3_750); // compiles only because the result is typed
    expect(done.attempts).toBe(1);
  });

  it('fails an order worth nothing at once, without retries', async () => {
    const { job } = await orrery().enqueue('invoice', {
      orderId: 'o-2',
      currency: 'USD',
      lines: [{ description: 'Sample', quantity: 1, unitCents: 0 }],
    });
    await started().runUntilIdle();
    const failed = await orrery().waitFor(job.id, 'failed', { type: 'invoice', timeout: 30_000, interval: 200 });
    expect(failed.attempts).toBe(1);
    expect(failed.lastError).toMatchObject({ name: 'PermanentError', message: 'order o-2 has nothing to invoice' });
  });

  it('refuses a payload its schema rejects, before anything is written', async () => {
    const untyped = started().client(); // no specs: any type name and any object compile
    const enqueue = untyped.enqueue('invoice', { orderId: 'o-3', currency: 'JPY', lines: [] });
    await expect(enqueue).rejects.toBeInstanceOf(ValidationFailed);
    await expect(enqueue).rejects.toMatchObject({ status: 400, code: 'invalid_payload' });
  });
});
