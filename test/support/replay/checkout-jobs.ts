/**
 * A `checkout` job in the versions a deploy may bring (tests of `orrery replay-check` and of the
 * worker's replay check): `v1`, then `v1` with a step renamed, removed, moved, or added behind
 * `ctx.patched`. Each is a job definition as `defineJob` makes it (without its Lambda entry).
 */
import { z } from 'zod';
import { defineJobType } from '../../../shared/core/job-type';
import type { JobContext, JobDefinition } from '../../../shared/runtime/job-definition';

export type CheckoutVariant = 'v1' | 'renamed' | 'removed' | 'reordered' | 'patched';

export const checkoutSpec = defineJobType({ type: 'checkout', payload: z.object({ order: z.string() }) });

/** The step bodies each variant ran, by name (a replay runs none). */
export const stepBodies: string[] = [];

/** The checkout job of `variant`: reserve, charge, a 2 h cool-off, ship (as `v1` has them). */
export function checkout(variant: CheckoutVariant): JobDefinition {
  return {
    spec: checkoutSpec,
    version: `checkout-${variant}`,
    run: async (payload: unknown, ctx: JobContext) => {
      const { order } = payload as { order: string };
      const step = (name: string) =>
        ctx.step(name, () => {
          stepBodies.push(name);
          return `${name}:${order}`;
        });
      if (variant === 'reordered') {
        await step('charge');
        await step('reserve');
      } else {
        await step('reserve');
        if (variant === 'renamed') await step('charge-card');
        else if (variant !== 'removed') await step('charge');
      }
      await ctx.sleep('cool-off', '2h');
      if (variant === 'patched' && (await ctx.patched('fraud-check'))) await step('fraud-check');
      return await step('ship');
    },
  };
}
