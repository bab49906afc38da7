import { defineJob } from '../../shared/runtime/define-job';
import { quoteOrderJob } from './catalog';

/** What a `price-item` job returns. */
interface ItemPrice {
  item: string;
  cents: number;
}

/**
 * Invokes a `price-item` job per item (ids `<this job's id>.price-<i>`), all at once, and adds up
 * their results. The first run ends its attempt while they run; the last one's end resumes it,
 * and the run that follows gets each result back from the journal.
 */
export const quoteOrder = defineJob(quoteOrderJob, async ({ orderId, items }, ctx) => {
  const prices = await Promise.all(
    items.map((item, i) => ctx.invoke<ItemPrice>(`price-${i}`, 'price-item', { orderId, item })),
  );
  const totalCents = prices.reduce((sum, price) => sum + price.cents, 0);
  return { orderId, prices, totalCents };
});
export const handler = quoteOrder.handler;
