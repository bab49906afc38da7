import { defineJob } from '../../shared/runtime/define-job';
import { shipOrderJob } from './catalog';

/** Ships an order once all its items are packed: the join of the order's flow, reading its parents' parcels. */
export const shipOrder = defineJob(shipOrderJob, async ({ orderId }, ctx) => {
  const parents = await ctx.parents();
  const parcels = Object.values(parents)
    .map((p) => (p.result as { parcel?: string } | null)?.parcel)
    .filter((parcel): parcel is string => parcel !== undefined)
    .sort();
  const shipment = await ctx.step('ship', () => {
    ctx.log.info('shipping', { orderId, parcels: parcels.length });
    return { trackingId: `TRK-${orderId}` };
  });
  return { orderId, parcels, ...shipment };
});
export const handler = shipOrder.handler;
