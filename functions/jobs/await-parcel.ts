import { PermanentError } from '../../shared/errors';
import { defineJob } from '../../shared/runtime/define-job';
import { awaitParcelJob, parcelShippedEvent } from './catalog';

/**
 * Waits for its order's `parcel.shipped` event (matched on `orderId`; one sent after this job was
 * created and before the wait is found too), with no Lambda running, for up to an hour.
 */
export const awaitParcel = defineJob(awaitParcelJob, async ({ orderId }, ctx) => {
  const shipped = await ctx.waitForEvent(parcelShippedEvent, { match: { 'data.orderId': orderId }, timeout: '1h' });
  if (shipped === null) throw new PermanentError(`order ${orderId}: no parcel.shipped event within the hour`);
  return { orderId, trackingId: shipped.data.trackingId, event: shipped.id };
});
export const handler = awaitParcel.handler;
