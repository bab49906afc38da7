import { defineJob } from '../../shared/runtime/define-job';
import { fulfilOrderJob } from './catalog';

/**
 * Fulfils an order in durable steps (here each step logs and returns what a real one would):
 * reserve every item, wait for the payment signal, let the cooling-off period pass, ship. Watch it
 * with `GET /jobs/{id}`: `waiting` for `payment`, then for `cooling-off`, then `succeeded`.
 */
export const fulfilOrder = defineJob(fulfilOrderJob, async ({ orderId, items, coolingOffSeconds = 10 }, ctx) => {
  const reserved: string[] = [];
  for (const [i, item] of items.entries()) {
    const reservation = await ctx.step(`reserve-${i}`, () => {
      ctx.log.info('reserving', { orderId, item });
      return { item, reservation: `${orderId}-${i}` };
    });
    reserved.push(reservation.reservation);
  }
  const payment = await ctx.waitForSignal<{ amount: number; reference: string }>('payment', { timeout: '1h' });
  if (payment === null) {
    await ctx.step('release', () => {
      ctx.log.warn('no payment within the hour: releasing the reservations', { orderId, reserved });
      return { released: reserved.length };
    });
    return { orderId, status: 'abandoned' };
  }
  if (coolingOffSeconds > 0) await ctx.sleep('cooling-off', coolingOffSeconds * 1000);
  const parcel = await ctx.step('ship', () => {
    ctx.log.info('shipping', { orderId, items: items.length });
    return { trackingId: `TRK-${orderId}` };
  });
  return { orderId, status: 'shipped', paid: payment.amount, reference: payment.reference, ...parcel };
});
export const handler = fulfilOrder.handler;
