/**
 * The app's job types, specs only (no handler code): the enqueue API bundles this file to
 * validate payloads, the stack reads each type's timeout and retries from it, and each handler
 * file binds its spec to a function.
 */
import { defineJobType } from 'orrery-jobs/runtime';
import * as z from 'zod/mini';

/** `invoice`: totals an order's lines into an invoice. */
export const invoiceJob = defineJobType({
  type: 'invoice',
  payload: z.strictObject({
    orderId: z.string().check(z.minLength(1), z.maxLength(64)),
    currency: z.enum(['EUR', 'GBP', 'USD']),
    lines: z
      .array(
        z.strictObject({
          description: z.string().check(z.maxLength(200)),
          quantity: z.int().check(z.minimum(1), z.maximum(10_000)),
          unitCents: z.int().check(z.minimum(0)),
        }),
      )
      .check(z.minLength(1), z.maxLength(100)),
  }),
  timeoutMs: 10_000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 1_000 } },
  describe: (payload) => ({ orderId: payload.orderId, lines: payload.lines.length }),
});

/**
 * `collect-payment`: a workflow. It sends the invoice, then waits up to 7 days for the payment
 * provider's `paid` signal; without one it sends a reminder and gives the customer 3 more days.
 */
export const collectPaymentJob = defineJobType({
  type: 'collect-payment',
  payload: z.strictObject({
    invoiceNumber: z.string().check(z.minLength(1), z.maxLength(80)),
    email: z.email(),
    totalCents: z.int().check(z.minimum(1)),
  }),
  // the signals its handler waits for, with their payloads' schemas: they type ctx.waitForSignal
  // and the client's signal()
  signals: {
    paid: z.strictObject({ amountCents: z.int().check(z.minimum(1)), reference: z.string().check(z.minLength(1)) }),
  },
  timeoutMs: 10_000,
});

export const catalog = [invoiceJob, collectPaymentJob] as const;
