/** A spec with two declared signals, shared by the type tests of the client and of the handler context. */
import { z } from 'zod';
import { defineJobType } from '../../shared/core/job-type';

export const orderJob = defineJobType({
  type: 'order',
  payload: z.object({ orderId: z.string() }),
  signals: {
    payment: z.object({ amount: z.number(), reference: z.string() }),
    cancel: z.object({ reason: z.string().default('customer') }),
  },
});
