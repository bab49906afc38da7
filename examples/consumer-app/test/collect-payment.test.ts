/**
 * The `collect-payment` workflow: a signal that comes in time (both modes), and the week without
 * one, travelled through on the in-memory platform's clock in milliseconds.
 */
import { createTestPlatform, ManualClock, type TestPlatform, type TestPlatformMode } from 'orrery-jobs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectPayment } from '../jobs/collect-payment.ts';

const DAY = 86_400_000;
const modes: readonly TestPlatformMode[] = ['memory', 'local-aws'];

/** The `ctx.step`s the job's runs recorded, in the order they were recorded. */
async function stepNames(platform: TestPlatform, jobId: string): Promise<string[]> {
  const entries = await platform.steps(jobId);
  return entries.filter((entry) => entry.kind === 'step').map((entry) => entry.name);
}

describe.each(modes)('%s', (mode) => {
  let platform: TestPlatform | undefined;

  beforeAll(async () => {
    platform = await createTestPlatform({ jobs: [collectPayment], mode });
  });

  afterAll(async () => {
    await platform?.stop();
  });

  function started(): TestPlatform {
    if (!platform) throw new Error(`the ${mode} platform did not start`);
    return platform;
  }

  it('sends the invoice, waits for the payment signal, and ends paid', async () => {
    const orrery = started().client([collectPayment]);
    const { job } = await orrery.enqueue('collect-payment', {
      invoiceNumber: `INV-${mode}-1`,
      email: 'buyer@example.com',
      totalCents: 3_750,
    });
    await started().runUntilIdle();
    expect(await orrery.get(job.id)).toMatchObject({
      state: 'waiting',
      waitingFor: { kind: 'signal', key: 'paid' },
    });

    // the name and the payload are typed by the spec: 'payd', or amountCents as a string, do not compile
    await orrery.signal(job.id, 'paid', { amountCents: 3_750, reference: 'pi_123' });
    await started().runUntilIdle();
    const done = await orrery.waitFor(job.id, 'succeeded', { type: 'collect-payment', timeout: 30_000, interval: 200 });
    expect(done.result).toEqual({ invoiceNumber: `INV-${mode}-1`, status: 'paid', reference: 'pi_123' });
    expect(await stepNames(started(), job.id)).toEqual(['send-invoice']);
  });
});

describe('memory, on a ManualClock', () => {
  let platform: TestPlatform | undefined;
  const clock = new ManualClock(Date.parse('2026-06-01T09:00:00Z'));

  beforeAll(async () => {
    platform = await createTestPlatform({ jobs: [collectPayment], mode: 'memory', clock });
  });

  afterAll(async () => {
    await platform?.stop();
  });

  it('reminds after a week without payment, then ends overdue after the grace period', async () => {
    if (!platform) throw new Error('the memory platform did not start');
    const orrery = platform.client([collectPayment]);
    const { job } = await orrery.enqueue('collect-payment', {
      invoiceNumber: 'INV-late',
      email: 'late@example.com',
      totalCents: 100,
    });
    await platform.runUntilIdle();

    await platform.advance(7 * DAY); // no signal: the wait times out, the reminder goes, the job sleeps
    expect(await orrery.get(job.id)).toMatchObject({
      state: 'waiting',
      waitingFor: { kind: 'sleep', key: 'grace-period' },
    });

    await platform.advance(3 * DAY);
    const done = await orrery.waitFor(job.id, 'succeeded', { type: 'collect-payment', timeout: 5_000, interval: 20 });
    expect(done.result).toEqual({ invoiceNumber: 'INV-late', status: 'overdue' });
    expect(await stepNames(platform, job.id)).toEqual(['send-invoice', 'send-reminder']);
    expect(done.attempts).toBe(1); // resumed three times, but never retried
  });
});
