/** The `invoice` worker's Lambda entry: totals the lines; an order worth nothing is refused for good. */
import { defineJob, PermanentError } from 'orrery-jobs/runtime';
import { invoiceJob } from './catalog.ts';

export const invoice = defineJob(invoiceJob, async ({ orderId, currency, lines }, ctx) => {
  const totalCents = lines.reduce((sum, line) => sum + line.quantity * line.unitCents, 0);
  if (totalCents === 0) throw new PermanentError(`order ${orderId} has nothing to invoice`); // not retried
  ctx.log.info('invoiced', { orderId, totalCents });
  return { invoiceNumber: `INV-${orderId}`, currency, totalCents };
});

export const handler = invoice.handler;
