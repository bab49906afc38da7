import { PermanentError } from '../../shared/errors';
import { defineJob } from '../../shared/runtime/define-job';
import { fulfilOrderJob } from './catalog';

/**
 * Takes an order in durable steps (here each step logs and returns what a real one would):
 * reserve every item, wait for the payment signal, let the cooling-off period pass. Watch it
 * with `GET /jobs/{id}`: `waiting` for `payment`, then for `cooling-off`, then `succeeded`. In
 * the order flow (README), its end releases a `pack-item` job per item, then `ship-order`.
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
  const payment = await ctx.waitForSignal('payment', { timeout: '1h' }); // typed by the spec's `signals`
  if (payment === null) {
    await ctx.step('release', () => {
      ctx.log.warn('no payment within the hour: releasing the reservations', { orderId, reserved });
      return { released: reserved.length };
    });
    // ends failed: the order's pack-item jobs (policy fail) end failed too, without running
    throw new PermanentError(`order ${orderId}: no payment within the hour; reservations released`);
  }
  if (coolingOffSeconds > 0) await ctx.sleep('cooling-off', coolingOffSeconds * 1000);
  await ctx.step('confirm', () => {
    ctx.log.info('order confirmed', { orderId, items: items.length, paid: payment.amount });
    return { confirmed: true };
  });
  return { orderId, status: 'paid', paid: payment.amount, reference: payment.reference, reserved };
});
export const handler = fulfilOrder.handler;
