/**
 * A job id means one job (issue 24, item 1): an id is free again once its job is past retention,
 * and the job that takes it then starts clean. Nothing the old job owned (its journal, its signal
 * inbox, its parents item, its registry of children) is read by the new one. On the in-memory
 * ports; the same rules hold on DynamoDB Local through the contract suites
 * (test/contract/journal.contract.ts, test/contract/job-graph.contract.ts).
 */
import { describe, expect, it } from 'vitest';
import type { JobContext } from '../../shared/runtime/job-definition';
import { newJob } from '../support/fakes';
import { echoJob, harness, redelivery, signalsOf } from './worker-harness';
import { depsPlatform } from './workflow-deps-harness';

const HOUR = 3_600_000;
const DAY = 86_400_000;

/** A workflow: a step, a sleep of an hour, then a signal wait of a day. */
function orderFlow() {
  const charged: number[] = [];
  const run = async (payload: unknown, ctx: JobContext) => {
    const n = (payload as { n: number }).n;
    const charge = await ctx.step('charge', () => {
      charged.push(n);
      return `charge-${n}`;
    });
    await ctx.sleep('cool-off', '1h');
    const payment = await ctx.waitForSignal('payment', { timeout: '1d' });
    return { charge, payment };
  };
  return { run, charged };
}

/** Runs `order-7` once to success (step, sleep, signal), then lets it pass its 30-day retention. */
async function firstOrder(h: ReturnType<typeof harness>) {
  h.store.seed(echoJob('order-7', { payload: { n: 1 } }));
  await signalsOf(h).send('order-7', 'payment', { payload: { amount: 1 } });
  await h.worker(redelivery('order-7')); // the step, then the sleep ends the attempt
  h.clock.advance(HOUR);
  await h.worker(redelivery('order-7')); // the sleep is over; the signal is in the inbox
  expect(h.store.peek('order-7')).toMatchObject({
    state: 'succeeded',
    result: { charge: 'charge-1', payment: { amount: 1 } },
  });
  h.clock.advance(31 * DAY);
}

/** The second job of id `order-7`, created once the first is past its retention. */
async function secondOrder(h: ReturnType<typeof harness>) {
  const created = await h.store.create(
    newJob({ id: 'order-7', type: 'echo', payload: { n: 2 }, payloadHash: 'order-2' }, h.clock.now()),
  );
  expect(created.created).toBe(true);
}

describe('a reused job id starts with an empty journal and inbox', () => {
  it('runs its steps, sleeps its sleeps and waits for its own signal', async () => {
    const flow = orderFlow();
    const h = harness({ run: flow.run });
    await firstOrder(h);
    await secondOrder(h);

    await h.worker(redelivery('order-7'));
    expect(flow.charged).toEqual([1, 2]); // not the old order's recorded charge
    expect(h.store.peek('order-7')).toMatchObject({ state: 'waiting', waitingFor: { kind: 'sleep' } });
    h.clock.advance(HOUR);
    await h.worker(redelivery('order-7'));
    // no signal of its own yet: it waits, and does not take the old order's payment
    expect(h.store.peek('order-7')).toMatchObject({ state: 'waiting', waitingFor: { kind: 'signal' } });
  });

  it('takes its own signal: POST /jobs/{id}/signals/{name} answers 200, not 409 signal_exists', async () => {
    const flow = orderFlow();
    const h = harness({ run: flow.run });
    await firstOrder(h);
    await secondOrder(h);
    const out = await signalsOf(h).send('order-7', 'payment', { payload: { amount: 2 } });
    expect(out).toMatchObject({ created: true, receipt: { duplicate: false } });
    await h.worker(redelivery('order-7'));
    h.clock.advance(HOUR);
    await h.worker(redelivery('order-7'));
    expect(h.store.peek('order-7')).toMatchObject({
      state: 'succeeded',
      result: { charge: 'charge-2', payment: { amount: 2 } },
    });
  });

  it('a retry, an operator retry and a resume of the same job keep its journal', async () => {
    const flow = orderFlow();
    let fail = true;
    const h = harness({
      run: async (payload, ctx) => {
        const out = await flow.run(payload, ctx);
        if (fail) throw new Error('once');
        return out;
      },
    });
    h.store.seed(echoJob('keep-1', { payload: { n: 5 } }));
    await signalsOf(h).send('keep-1', 'payment', { payload: { amount: 5 } });
    await h.worker(redelivery('keep-1'));
    h.clock.advance(HOUR);
    await h.worker(redelivery('keep-1')); // resumed: the step is not run again; then it throws
    expect(h.store.peek('keep-1')).toMatchObject({ state: 'retrying' });
    fail = false;
    h.clock.advance(2000);
    await h.worker(redelivery('keep-1'));
    expect(flow.charged).toEqual([5]);
    expect(h.store.peek('keep-1')).toMatchObject({
      state: 'succeeded',
      result: { charge: 'charge-5', payment: { amount: 5 } },
    });
  });
});

describe('a reused job id starts with no parents and no children', () => {
  /** Flow 1 (P → C) runs to the end, then both pass their retention. */
  async function firstFlow(p: ReturnType<typeof depsPlatform>) {
    await p.flows.create({
      id: 'flow-1',
      jobs: [
        { id: 'P', type: 'node', payload: {} },
        { id: 'C', type: 'node', payload: {}, dependsOn: ['P'] },
      ],
    });
    await p.drain();
    expect(p.runs).toEqual(['P', 'C']);
    expect(p.store.peek('C')?.state).toBe('succeeded');
    p.clock.advance(31 * DAY);
  }

  /** Delivers the messages sent for `id` so far (and only those). */
  async function deliver(p: ReturnType<typeof depsPlatform>, id: string) {
    const { sqsRecord } = await import('../support/fakes');
    const mine = p.queue.sent.filter((s) => s.message.id === id);
    for (const sent of mine) await p.worker({ Records: [sqsRecord(sent.message, { messageId: `m-${id}` })] });
  }

  it('flow 2 (X → C, P → D): P releases D, not its old child C, which waits for X', async () => {
    const p = depsPlatform();
    await firstFlow(p);
    await p.flows.create({
      id: 'flow-2',
      jobs: [
        { id: 'X', type: 'node', payload: {} },
        { id: 'P', type: 'node', payload: {} },
        { id: 'C', type: 'node', payload: {}, dependsOn: ['X'] },
        { id: 'D', type: 'node', payload: {}, dependsOn: ['P'] },
      ],
    });
    expect(p.store.peek('C')).toMatchObject({ state: 'waiting', pendingParents: 1 });
    expect(p.store.peek('D')).toMatchObject({ state: 'waiting', pendingParents: 1 });
    await deliver(p, 'P');
    expect(p.store.peek('P')?.state).toBe('succeeded');
    expect(p.store.peek('D')?.state).toBe('queued'); // released by P
    expect(p.store.peek('C')).toMatchObject({ state: 'waiting', pendingParents: 1 }); // X still queued
    expect(p.store.peek('X')?.state).toBe('queued');
    await p.drain();
    expect(p.runs.slice(2).sort()).toEqual(['C', 'D', 'P', 'X']);
    expect(p.runs.indexOf('C', 2)).toBeGreaterThan(p.runs.indexOf('X', 2));
  });

  it('a single enqueue with a reused parent id registers with the new parent (no 500) and is released by it', async () => {
    const p = depsPlatform();
    await firstFlow(p);
    await p.enqueue('P');
    const out = await p.enqueue('D', ['P']);
    expect(out.created).toBe(true);
    expect(p.graph.registry('P').filter((e) => e !== 'tombstone' && e?.child === 'D')).toHaveLength(1);
    await p.drain();
    expect(p.store.peek('D')?.state).toBe('succeeded');
    expect(p.runs.slice(2)).toEqual(['P', 'D']);
  });

  it('a reused child id with no dependsOn has no parents (GET /jobs/{id}, ctx.parents())', async () => {
    const p = depsPlatform();
    await firstFlow(p);
    await p.enqueue('C');
    expect((await p.jobs.get('C')).parents).toBeUndefined();
    await p.drain();
    expect(p.store.peek('C')?.state).toBe('succeeded');
    expect(p.parentsSeen.get('C')).toEqual({});
  });

  it('an enqueue replayed against the live job reads that job’s own parents item', async () => {
    const p = depsPlatform();
    await p.enqueue('A');
    await p.enqueue('B');
    p.clock.advance(1000);
    await p.enqueue('K', ['A']);
    p.clock.advance(1000);
    // the same request again: a replay (200), its parents compared with K's own
    expect((await p.enqueue('K', ['A'])).created).toBe(false);
    await expect(p.enqueue('K', ['B'])).rejects.toMatchObject({ code: 'id_conflict' });
  });
});
