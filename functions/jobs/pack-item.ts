import { defineJob } from '../../shared/runtime/define-job';
import { packItemJob } from './catalog';

/** Packs one item of a paid order (here: logs it), once: a retry gets the recorded parcel back. */
export const packItem = defineJob(packItemJob, async ({ orderId, item }, ctx) =>
  ctx.step('pack', () => {
    ctx.log.info('packing', { orderId, item });
    return { item, parcel: `${orderId}/${item}` };
  }),
);
export const handler = packItem.handler;
