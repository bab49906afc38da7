import { eventsFrom } from '../../shared/api/events-from';
import { defineJob } from '../../shared/runtime/define-job';
import { catalog, parcelShippedEvent, shipParcelJob } from './catalog';

/**
 * Ships an order's parcel (a step: here it makes up a tracking id) and sends `parcel.shipped`
 * (`ctx.emit`, a step too: a retry sends it once), which wakes the order's `await-parcel` job.
 * Deployed, it sends through `eventsFrom(catalog)`: the catalog names the types that wait for it.
 */
export const shipParcel = defineJob(
  shipParcelJob,
  async ({ orderId }, ctx) => {
    const parcel = await ctx.step('ship', () => ({ trackingId: `trk-${orderId}` }));
    const sent = await ctx.emit(parcelShippedEvent, { orderId, trackingId: parcel.trackingId });
    return { orderId, trackingId: parcel.trackingId, event: sent.id };
  },
  { events: eventsFrom(catalog) },
);
export const handler = shipParcel.handler;
