import { defineJob } from '../../shared/runtime/define-job';
import { priceItemJob } from './catalog';

/** Prices one item: a made-up price from its name (100 cents a letter), the same on every run. */
export const priceItem = defineJob(priceItemJob, async ({ orderId, item }, ctx) => {
  ctx.log.info('pricing', { orderId, item });
  return { item, cents: item.length * 100 };
});
export const handler = priceItem.handler;
