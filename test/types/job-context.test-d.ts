/**
 * Compile-time checks of what a handler's context takes from its spec, run by `npm run typecheck`
 * like ./client.test-d.ts: a line that should not compile carries `@ts-expect-error`, and tsc
 * fails if it compiles after all.
 */
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import * as zm from 'zod/mini';
import { fulfilOrder } from '../../functions/jobs/fulfil-order';
import { defineJobType } from '../../shared/core/job-type';
import type { JobState } from '../../shared/core/states';
import { defineJob } from '../../shared/runtime/define-job';
import type { JobContext, JobDefinition } from '../../shared/runtime/job-definition';
import { orderJob } from './order-spec';

const plainJob = defineJobType({ type: 'plain', payload: z.object({ n: z.number() }) });

describe('defineJobType keeps what the spec declares', () => {
  it('keeps the literal type name and the signal schemas by name', () => {
    expectTypeOf(orderJob.type).toEqualTypeOf<'order'>();
    expectTypeOf<keyof NonNullable<typeof orderJob.signals>>().toEqualTypeOf<'payment' | 'cancel'>();
  });
});

describe('ctx.waitForSignal in defineJob', () => {
  it('returns the payload of a declared signal without a type argument', () => {
    defineJob(orderJob, async (_payload, ctx) => {
      const payment = await ctx.waitForSignal('payment', { timeout: '1h' });
      expectTypeOf(payment).toEqualTypeOf<{ amount: number; reference: string } | null>();
      // the schema's output: the default is applied
      expectTypeOf(await ctx.waitForSignal('cancel')).toEqualTypeOf<{ reason: string } | null>();
      return null;
    });
  });

  it('refuses a name the spec does not declare, and a restated type', () => {
    defineJob(orderJob, async (_payload, ctx) => {
      // @ts-expect-error not a signal of the order type (a typo of "payment")
      await ctx.waitForSignal('paymnet');
      // @ts-expect-error the payload type comes from the spec, not from a type argument
      await ctx.waitForSignal<{ amount: string }>('payment');
      return null;
    });
  });

  it('types the signals of a zod/mini spec too', () => {
    const miniJob = defineJobType({
      type: 'mini',
      payload: zm.object({ id: zm.string() }),
      signals: { approved: zm.object({ by: zm.string() }) },
    });
    defineJob(miniJob, async (_payload, ctx) => {
      expectTypeOf(await ctx.waitForSignal('approved')).toEqualTypeOf<{ by: string } | null>();
      // @ts-expect-error not a signal of the mini type
      await ctx.waitForSignal('rejected');
      return null;
    });
  });

  it('takes any name when the spec declares no signals: unknown, or the type argument', () => {
    defineJob(plainJob, async (_payload, ctx) => {
      expectTypeOf(await ctx.waitForSignal('anything')).toEqualTypeOf<unknown>();
      expectTypeOf(await ctx.waitForSignal<{ ok: boolean }>('go')).toEqualTypeOf<{ ok: boolean } | null>();
      return null;
    });
  });

  it('types the repository’s fulfil-order handler from its catalog spec', () => {
    expectTypeOf(fulfilOrder.spec.type).toEqualTypeOf<'fulfil-order'>();
    type Ctx = Parameters<typeof fulfilOrder.run>[1];
    expectTypeOf<Awaited<ReturnType<Ctx['waitForSignal']>>>().toEqualTypeOf<{
      amount: number;
      reference: string;
    } | null>();
  });
});

describe('ctx.parents', () => {
  it('is always there: no optional call', () => {
    defineJob(plainJob, async (_payload, ctx) => {
      const parents = await ctx.parents();
      expectTypeOf(parents).toEqualTypeOf<Record<string, { state: JobState; result: unknown }>>();
      return Object.keys(parents);
    });
    expectTypeOf<JobContext['parents']>().not.toEqualTypeOf<undefined>();
    expectTypeOf<undefined>().not.toExtend<JobContext['parents']>();
  });
});

describe('definitions stay interchangeable', () => {
  const order = defineJob(orderJob, async ({ orderId }, ctx) => {
    const payment = await ctx.waitForSignal('payment');
    return { orderId, paid: payment?.amount ?? 0 };
  });
  const plain = defineJob(plainJob, async ({ n }) => ({ doubled: n * 2 }));

  it('keeps the handler result type', () => {
    expectTypeOf(order.run).returns.toEqualTypeOf<Promise<{ orderId: string; paid: number }>>();
    expectTypeOf(plain.run).returns.toEqualTypeOf<Promise<{ doubled: number }>>();
  });

  it('puts typed definitions in one list of JobDefinition (what workers and the local platform take)', () => {
    const jobs: JobDefinition[] = [order, plain];
    expectTypeOf(jobs).items.toHaveProperty('spec');
  });

  it('binds a handler written against the plain JobContext to a spec with signals', () => {
    const run = async (_payload: { orderId: string }, ctx: JobContext) => ({
      got: await ctx.waitForSignal<{ amount: number }>('payment'),
    });
    defineJob(orderJob, run);
  });
});
