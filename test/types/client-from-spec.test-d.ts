/**
 * Compile-time checks of what the client takes from the specs and definitions it is built with:
 * signal names and payloads (`signals`), and job results (the handler's return type). Run by
 * `npm run typecheck` like ./client.test-d.ts: a line that should not compile carries
 * `@ts-expect-error`, and tsc fails if it compiles after all.
 */
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { type catalog, echoJob } from '../../functions/jobs/catalog';
import type { fulfilOrder } from '../../functions/jobs/fulfil-order';
import {
  createClient,
  type JobView,
  type Jsonified,
  type OrreryClient,
  type SignalName,
  type StoredResult,
} from '../../shared/client';
import { defineJobType } from '../../shared/core/job-type';
import { defineJob } from '../../shared/runtime/define-job';
import { orderJob } from './order-spec';

const url = 'http://127.0.0.1:4600';

const refundJob = defineJobType({
  type: 'refund',
  payload: z.object({ orderId: z.string() }),
  signals: {
    approve: z.object({ by: z.string() }),
    cancel: z.object({ reason: z.string(), note: z.string() }),
  },
});
const plainJob = defineJobType({ type: 'plain', payload: z.object({ n: z.number() }) });

const order = defineJob(orderJob, async ({ orderId }, ctx) => {
  const payment = await ctx.waitForSignal('payment');
  return { orderId, paid: payment?.amount ?? 0, at: new Date(), note: undefined as string | undefined };
});
const plain = defineJob(plainJob, async () => {});

/** Definitions and a bare spec, as an app's `jobs.ts` would export them. */
const jobs = [order, plain, refundJob] as const;

type OrderResult = { orderId: string; paid: number; at: string; note?: string };

describe('client.signal(id, name, payload) typed by the specs’ signals', () => {
  const client = createClient<typeof jobs>({ url });

  it('takes the declared names, each with its payload', () => {
    client.signal('o-1', 'payment', { amount: 42, reference: 'pi_1' });
    client.signal('r-1', 'approve', { by: 'ops' });
    client.signal('o-1', 'cancel', {}); // order's cancel has a default reason: its input may omit it
    expectTypeOf<SignalName<typeof client extends OrreryClient<infer T> ? T : never>>().toEqualTypeOf<
      'payment' | 'cancel' | 'approve'
    >();
  });

  it('refuses a typo, a wrong payload, a missing payload and another signal’s payload', () => {
    // @ts-expect-error no type declares "paymnet"
    client.signal('o-1', 'paymnet', { amount: 42, reference: 'pi_1' });
    // @ts-expect-error amount is a number
    client.signal('o-1', 'payment', { amount: '42', reference: 'pi_1' });
    // @ts-expect-error the payment payload is required
    client.signal('o-1', 'payment');
    // @ts-expect-error approve's payload is not payment's
    client.signal('o-1', 'payment', { by: 'ops' });
  });

  it('narrows names and payloads to one type with { type }', () => {
    client.signal('r-1', 'cancel', { reason: 'dup', note: 'n' }, { type: 'refund' });
    // @ts-expect-error refund's cancel needs a note (order's does not)
    client.signal('r-1', 'cancel', { reason: 'dup' }, { type: 'refund' });
    // @ts-expect-error payment is not a signal of refund
    client.signal('r-1', 'payment', { amount: 1, reference: 'x' }, { type: 'refund' });
    // plain declares no signals: any name, any payload, for that type
    client.signal('p-1', 'go', { any: 'thing' }, { type: 'plain' });
    // @ts-expect-error without { type: 'plain' }, only the declared names
    client.signal('p-1', 'go', { any: 'thing' });
    // @ts-expect-error not a type of the catalog
    client.signal('x-1', 'payment', { amount: 1, reference: 'x' }, { type: 'nope' });
  });

  it('types the repository’s catalog: fulfil-order declares payment', () => {
    const typed = createClient<typeof catalog>({ url });
    typed.signal('o7', 'payment', { amount: 42, reference: 'pay-1' });
    // @ts-expect-error reference is required
    typed.signal('o7', 'payment', { amount: 42 });
    // @ts-expect-error no type of the catalog declares "paid"
    typed.signal('o7', 'paid', { amount: 42, reference: 'pay-1' });
  });

  it('takes any name and payload without a catalog, or when no type declares signals', () => {
    const untyped = createClient({ url });
    untyped.signal('id', 'anything', { a: 1 });
    untyped.signal('id', 'anything');
    const noSignals = createClient({ url, jobs: { echo: echoJob } });
    noSignals.signal('id', 'anything', 'text');
    noSignals.signal('id', 'anything');
  });
});

describe('result typed from the handler where the client has the definitions', () => {
  const client = createClient<typeof jobs>({ url });

  it('waitFor(id, "succeeded", { type }) gives the handler’s result as JSON, not null', async () => {
    const done = await client.waitFor('o-1', 'succeeded', { type: 'order' });
    expectTypeOf(done.state).toEqualTypeOf<'succeeded'>();
    expectTypeOf(done.payload).toEqualTypeOf<{ orderId: string }>();
    expectTypeOf(done.result).toEqualTypeOf<OrderResult>(); // the Date is its JSON text
  });

  it('is null until the job succeeded: other states, get, enqueue', async () => {
    const ended = await client.waitFor('o-1', ['succeeded', 'failed'], { type: 'order' });
    expectTypeOf(ended.state).toEqualTypeOf<'succeeded' | 'failed'>();
    expectTypeOf(ended.result).toEqualTypeOf<OrderResult | null>();
    expectTypeOf((await client.get('o-1', { type: 'order' })).result).toEqualTypeOf<OrderResult | null>();
    const { job } = await client.enqueue('order', { orderId: 'o-1' });
    expectTypeOf(job.result).toEqualTypeOf<OrderResult | null>();
    // the enqueued job's own type, carried along
    const again = await client.waitFor(job.id, 'succeeded', { type: job.type });
    expectTypeOf(again.result).toEqualTypeOf<OrderResult>();
  });

  it('is null for a handler that returns nothing, unknown for a spec without its handler', async () => {
    expectTypeOf((await client.waitFor('p-1', 'succeeded', { type: 'plain' })).result).toEqualTypeOf<null>();
    expectTypeOf((await client.waitFor('r-1', 'succeeded', { type: 'refund' })).result).toEqualTypeOf<unknown>();
  });

  it('stays JobView, result unknown, without { type }', async () => {
    expectTypeOf(await client.waitFor('o-1', 'succeeded')).toEqualTypeOf<JobView>();
    expectTypeOf(await client.get('o-1')).toEqualTypeOf<JobView>();
    // @ts-expect-error not a type of the catalog
    await client.get('o-1', { type: 'nope' });
  });

  it('works with the record form and with the repository’s definitions', async () => {
    const record = createClient({ url, jobs: { order, plain } });
    expectTypeOf((await record.waitFor('o-1', 'succeeded', { type: 'order' })).result).toEqualTypeOf<OrderResult>();
    const repo = createClient<readonly [typeof fulfilOrder]>({ url });
    const paid = await repo.waitFor('o7', 'succeeded', { type: 'fulfil-order' });
    expectTypeOf(paid.result).toEqualTypeOf<{
      orderId: string;
      status: string;
      paid: number;
      reference: string;
      reserved: string[];
    }>();
  });

  it('types what an untyped client is told, with an unknown result', async () => {
    const untyped = createClient({ url });
    const job = await untyped.get('x', { type: 'anything' });
    expectTypeOf(job.type).toEqualTypeOf<'anything'>();
    expectTypeOf(job.result).toEqualTypeOf<unknown>();
  });
});

describe('Jsonified: a result as JSON reads it back', () => {
  it('turns dates to text and drops what JSON drops', () => {
    type Out = Jsonified<{ at: Date; f: () => void; u: undefined; list: (number | undefined)[]; o?: { d: Date } }>;
    expectTypeOf<Out>().toEqualTypeOf<{ at: string; list: (number | null)[]; o?: { d: string } }>();
    // biome-ignore lint/suspicious/noExplicitAny: what `await res.json()` gives a handler
    expectTypeOf<Jsonified<{ id: any; n: number }>>().toEqualTypeOf<{ id?: any; n: number }>();
    expectTypeOf<StoredResult<void>>().toEqualTypeOf<null>();
    expectTypeOf<StoredResult<unknown>>().toEqualTypeOf<unknown>();
    expectTypeOf<StoredResult<{ a: 1 } | undefined>>().toEqualTypeOf<{ a: 1 } | null>();
  });
});
