/**
 * `ctx.emit` and `ctx.waitForEvent` on the in-memory ports, with the API's own events and
 * signals services (test/integration/workflow-events.test.ts runs the same on DynamoDB Local):
 * an event sent after the wait wakes it; one sent before the wait but after the job was created
 * is not lost; one sent before the job was created, or with another value, is not matched; the
 * timeout returns null; an emit replayed, or sent again after a crash before its record, makes
 * its subscribers' jobs once.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { EventsService } from '../../shared/api/events-service';
import { JobsService } from '../../shared/api/jobs-service';
import { defineEvent, subscribe } from '../../shared/core/events';
import { defineJobType, type JobTypeSpec } from '../../shared/core/job-type';
import { createLogger } from '../../shared/logger';
import type { JobContext } from '../../shared/runtime/job-definition';
import { FakeEventWaits } from '../local-aws/memory-event-waits';
import { testConfig } from '../support/fakes';
import { echoJob, harness, redelivery, signalsOf } from './worker-harness';

const HOUR = 3_600_000;

const orderPaid = defineEvent('order.paid', z.object({ orderId: z.string(), amount: z.number() }), {
  matchOn: ['orderId'],
});
/** A subscriber, so the API's catalog knows the event (and `ctx.emit` makes its jobs). */
const billSpec = defineJobType({
  type: 'bill',
  payload: z.object({ orderId: z.string(), amount: z.number() }),
  on: [subscribe(orderPaid)],
});
const spec = defineJobType({
  type: 'echo',
  payload: z.object({ n: z.number() }),
  timeoutMs: 30_000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
});

function setup(
  run: (payload: unknown, ctx: JobContext) => Promise<unknown>,
  catalog: readonly JobTypeSpec[] = [billSpec],
) {
  const eventWaits = new FakeEventWaits();
  const sends: string[] = [];
  let events: EventsService | undefined;
  const h = harness({
    spec,
    run,
    eventWaits,
    events: {
      async send(event) {
        sends.push(event.id);
        await events?.send(event, 'job:test');
      },
    },
  });
  const log = createLogger({ level: 'error' });
  const jobs = new JobsService({
    config: testConfig(['echo', 'bill']),
    catalog,
    store: h.store,
    queue: h.queue,
    scheduler: h.scheduler,
    clock: h.clock,
    log,
  });
  const signals = signalsOf(h);
  events = new EventsService({
    jobs,
    specs: catalog,
    waits: {
      index: eventWaits,
      deliver: (waiter, event) => signals.deliverEvent(waiter, event),
      clock: h.clock,
      retentionDays: 7,
    },
  });
  const send = (orderId: string, id: string, name = 'order.paid') =>
    events.send({ name, id, data: { orderId, amount: 5 } });
  return { h, events, send, sends, eventWaits };
}

/** Waits for `order.paid` of the order named by the job's id, for an hour. */
const waiter = async (_p: unknown, ctx: JobContext) => ({
  got: await ctx.waitForEvent(orderPaid, { match: { 'data.orderId': ctx.jobId }, timeout: '1h' }),
});

describe('ctx.waitForEvent', () => {
  it('returns an event sent after the wait began: the send wakes the waiting job', async () => {
    const { h, send } = setup(waiter);
    h.store.seed(echoJob('w-1'));
    await h.worker(redelivery('w-1'));
    expect(h.store.peek('w-1')).toMatchObject({
      state: 'waiting',
      waitingFor: { kind: 'signal', key: 'event:order.paid' },
    });
    h.clock.advance(60_000);
    await send('w-1', 'pay-1');
    // woken: due now, and its message sent
    expect(h.store.peek('w-1')?.runAt).toBe(new Date(h.clock.now()).toISOString());
    expect(h.queue.sent.map((s) => s.message)).toContainEqual({ v: 1, id: 'w-1', type: 'echo' });
    await h.worker(redelivery('w-1'));
    expect(h.store.peek('w-1')).toMatchObject({
      state: 'succeeded',
      result: { got: { id: 'pay-1', name: 'order.paid', data: { orderId: 'w-1', amount: 5 } } },
    });
  });

  it('returns an event sent after the job was created and before it waits, without suspending', async () => {
    const { h, send } = setup(waiter);
    h.store.seed(echoJob('w-2'));
    h.clock.advance(1_000);
    await send('w-2', 'pay-2');
    await h.worker(redelivery('w-2'));
    expect(h.store.peek('w-2')).toMatchObject({ state: 'succeeded', result: { got: { id: 'pay-2' } } });
  });

  it('does not match an event sent before the job was created, nor one with another value', async () => {
    const { h, send } = setup(waiter);
    await send('w-3', 'pay-early');
    h.clock.advance(1_000);
    h.store.seed(echoJob('w-3', { createdAt: new Date(h.clock.now()).toISOString() }));
    await h.worker(redelivery('w-3'));
    expect(h.store.peek('w-3')?.state).toBe('waiting');
    await send('w-other', 'pay-other');
    expect(h.store.peek('w-3')?.state).toBe('waiting');
    h.clock.advance(HOUR);
    await h.worker(redelivery('w-3'));
    expect(h.store.peek('w-3')).toMatchObject({ state: 'succeeded', result: { got: null } });
  });

  it('returns null at its timeout, and an event after that does not wake the job', async () => {
    const { h, send } = setup(waiter);
    h.store.seed(echoJob('w-4'));
    await h.worker(redelivery('w-4'));
    h.clock.advance(HOUR + 1);
    await h.worker(redelivery('w-4'));
    expect(h.store.peek('w-4')).toMatchObject({ state: 'succeeded', result: { got: null } });
    await send('w-4', 'pay-late');
    expect(h.store.peek('w-4')).toMatchObject({ state: 'succeeded', result: { got: null } });
  });

  it('returns the first of two matching events, once', async () => {
    const { h, send } = setup(waiter);
    h.store.seed(echoJob('w-5'));
    await h.worker(redelivery('w-5'));
    await send('w-5', 'pay-a');
    await send('w-5', 'pay-b');
    await h.worker(redelivery('w-5'));
    expect(h.store.peek('w-5')).toMatchObject({ state: 'succeeded', result: { got: { id: 'pay-a' } } });
  });

  it('fails the job when the match path is not in the event’s matchOn', async () => {
    const { h } = setup(async (_p, ctx) => ctx.waitForEvent(orderPaid, { match: { 'data.amount': 5 } }));
    h.store.seed(echoJob('w-6'));
    await h.worker(redelivery('w-6'));
    expect(h.store.peek('w-6')).toMatchObject({ state: 'failed' });
    expect(JSON.stringify(h.store.peek('w-6')?.lastError)).toContain('matchOn');
  });

  it('an event without waits costs no match-index request', async () => {
    const { send, eventWaits } = setup(waiter);
    await send('nobody', 'pay-n');
    expect(eventWaits.calls.map((c) => c.method)).toEqual(['recordSent', 'waiters']);
  });
});

describe('events only waited for, and events nobody waits on', () => {
  const refundIssued = defineEvent('refund.issued', z.object({ orderId: z.string(), amount: z.number() }), {
    matchOn: ['orderId'],
  });
  const orderNoted = defineEvent('order.noted', z.object({ orderId: z.string(), amount: z.number() }));
  /** The waiting type lists the event it waits for; nobody subscribes to it. */
  const waitsSpec = defineJobType({ type: 'echo', payload: z.object({ n: z.number() }), waitsFor: [refundIssued] });
  const notedSpec = defineJobType({
    type: 'bill',
    payload: z.object({}),
    on: [subscribe(orderNoted, { payload: () => ({}) })],
  });

  it('takes an event that a type only waits for (no subscriber), and delivers it to the wait', async () => {
    const { h, send } = setup(
      async (_p, ctx) => ({ got: await ctx.waitForEvent(refundIssued, { match: { 'data.orderId': ctx.jobId } }) }),
      [waitsSpec],
    );
    h.store.seed(echoJob('r-1'));
    await h.worker(redelivery('r-1'));
    const sent = await send('r-1', 'refund-1', 'refund.issued');
    expect(sent.events[0]?.jobs).toEqual([]);
    await h.worker(redelivery('r-1'));
    expect(h.store.peek('r-1')).toMatchObject({ state: 'succeeded', result: { got: { id: 'refund-1' } } });
  });

  it('an event whose definition declares no matchOn makes no request of the match index', async () => {
    const { send, eventWaits } = setup(waiter, [billSpec, notedSpec]);
    await send('o-9', 'noted-1', 'order.noted');
    expect(eventWaits.calls).toEqual([]);
  });
});

describe('ctx.emit', () => {
  it('sends the event once: a replay after a sleep does not send it again; its subscriber gets one job', async () => {
    const { h, sends } = setup(async (_p, ctx) => {
      const sent = await ctx.emit(orderPaid, { orderId: 'o-e1', amount: 3 });
      await ctx.sleep('later', '2h');
      return sent;
    });
    h.store.seed(echoJob('e-1'));
    await h.worker(redelivery('e-1'));
    expect(h.store.peek('e-1')?.state).toBe('waiting');
    h.clock.advance(2 * HOUR);
    await h.worker(redelivery('e-1'));
    expect(h.store.peek('e-1')?.state).toBe('succeeded');
    expect(sends).toHaveLength(1);
    const bills = h.store.all().filter((j) => j.type === 'bill');
    expect(bills).toHaveLength(1);
    expect(bills[0]?.payload).toEqual({ orderId: 'o-e1', amount: 3 });
    expect(h.store.peek('e-1')?.result).toEqual({ id: sends[0] });
  });

  it('an attempt that died between the send and its record sends the same event again: still one job', async () => {
    const { h, sends } = setup(async (_p, ctx) => ctx.emit(orderPaid, { orderId: 'o-e2', amount: 3 }));
    const record = h.journal.record.bind(h.journal);
    let fail = true;
    h.journal.record = async (input) => {
      if (fail && input.name === 'emit:order.paid') {
        fail = false;
        throw new Error('the attempt died before recording its step');
      }
      return record(input);
    };
    h.store.seed(echoJob('e-2'));
    await h.worker(redelivery('e-2'));
    h.clock.advance(10_000);
    await h.worker(redelivery('e-2'));
    expect(h.store.peek('e-2')?.state).toBe('succeeded');
    expect(sends).toHaveLength(2);
    expect(sends[0]).toBe(sends[1]);
    expect(h.store.all().filter((j) => j.type === 'bill')).toHaveLength(1);
  });

  it('fails the job when the event refuses its data', async () => {
    const { h } = setup(async (_p, ctx) => ctx.emit('order.paid', { orderId: 1 }));
    h.store.seed(echoJob('e-3'));
    await h.worker(redelivery('e-3'));
    expect(h.store.peek('e-3')).toMatchObject({ state: 'failed' });
  });
});
