import { defineBatchJob } from '../../shared/runtime/define-batch-job';
import { sendReceiptJob } from './catalog';

/**
 * Sends receipts in batches (here: logs each batch as one call to a mail service would be): one
 * handler call gets up to 10 jobs, and answers one outcome per job, in order. An address without
 * `@` fails that receipt alone; the others succeed and are not sent again.
 */
export const sendReceipt = defineBatchJob(sendReceiptJob, async (items, ctx) => {
  ctx.log.info('sending receipts', { count: items.length });
  return items.map(({ payload }) =>
    payload.email.includes('@')
      ? { ok: true as const, result: { orderId: payload.orderId, sentTo: payload.email, batchOf: items.length } }
      : { ok: false as const, error: new Error(`no address: ${payload.email}`) },
  );
});
export const handler = sendReceipt.handler;
