/**
 * Job types of an app's tests of the testing kit (test/unit/testing-memory-mode.test.ts in
 * memory, test/integration/testing-local-aws.test.ts on local AWS): a plain job, a flaky one, a
 * workflow (a step, a day's sleep, a signal), one that reads its parents, and one that only
 * stops at its timeout.
 */
import * as z from 'zod/mini';
import { defineJobType } from '../../shared/core/job-type';
import { PermanentError } from '../../shared/errors';
import { defineJob } from '../../shared/runtime/define-job';

export const DAY = 86_400_000;

export const greetJob = defineJobType({ type: 'greet', payload: z.object({ name: z.string() }) });
export const flakyJob = defineJobType({
  type: 'flaky',
  payload: z.object({ failures: z.number() }),
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2_000 } },
});
export const orderJob = defineJobType({ type: 'order', payload: z.object({ orderId: z.string() }) });
export const reportJob = defineJobType({ type: 'report', payload: z.object({}) });
export const hangJob = defineJobType({
  type: 'hang',
  payload: z.object({}),
  timeoutMs: 5_000,
  retry: { maxAttempts: 1 },
});
export const specs = { greet: greetJob, flaky: flakyJob, order: orderJob, report: reportJob, hang: hangJob };

/** How many times the order workflow's `charge` step ran, whatever the replays. */
export const counters = { charges: 0 };

export const jobs = [
  defineJob(greetJob, async ({ name }) => {
    if (name === '') throw new PermanentError('no name');
    return { hello: name };
  }),
  defineJob(flakyJob, async ({ failures }, ctx) => {
    if (ctx.attempt <= failures) throw new Error(`attempt ${ctx.attempt} fails`);
    return { attempt: ctx.attempt };
  }),
  defineJob(orderJob, async ({ orderId }, ctx) => {
    const charge = await ctx.step('charge', async () => {
      counters.charges += 1;
      return { chargeId: `ch-${orderId}` };
    });
    await ctx.sleep('cool-off', '1d');
    const shipped = await ctx.waitForSignal<{ carrier: string }>('shipped', { timeout: '7d' });
    return { ...charge, carrier: shipped?.carrier ?? null };
  }),
  defineJob(reportJob, async (_payload, ctx) => ({ parents: await ctx.parents?.() })),
  defineJob(hangJob, (_payload, ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', reject))),
];
