/**
 * Edges of `ctx.emit` and `ctx.waitForEvent` on the in-memory ports (beside
 * ./workflow-events.test.ts): the deployed emitter's routes, the creation line on the delivery
 * side, an emit sent again after a crash (with the same data, and with other data), two events
 * racing one wait, and a wait whose attempt dies before its suspend write.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEventSender } from '../../shared/api/event-sender';
import { namedRoute, type QueueNaming } from '../../shared/config';
import { defineEvent, subscribe } from '../../shared/core/events';
import { defineJobType } from '../../shared/core/job-type';
import { createLogger } from '../../shared/logger';
import type { JobContext } from '../../shared/runtime/job-definition';
import { FakeEventWaits } from '../local-aws/memory-event-waits';
import { testConfig } from '../support/fakes';
import { echoJob, type HarnessOptions, harness, redelivery } from './worker-harness';

const orderPaid = defineEvent('order.paid', z.object({ orderId: z.string(), amount: z.number() }), {
  matchOn: ['orderId'],
});
/** The subscriber: the emitter's catalog (`eventsFrom([billSpec])`) knows the event by it. */
const billSpec = defineJobType({
  type: 'bill',
  payload: z.object({ orderId: z.string(), amount: z.number() }),
  on: [subscribe(orderPaid)],
});
const echoSpec = defineJobType({
  type: 'echo',
  payload: z.object({ n: z.number() }),
  timeoutMs: 30_000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
});
/** The deployment's queue naming, by which a worker finds the queue of a type it has no route for. */
const NAMING: QueueNaming = {
  urlBase: 'https://sqs.eu-west-1.amazonaws.com/123456789012/',
  arnBase: 'arn:aws:sqs:eu-west-1:123456789012:',
  prefix: 'orrery',
};

/** Waits for `order.paid` of the order named by the job's id, for a day. */
const waiter = async (_p: unknown, ctx: JobContext) => ({
  got: await ctx.waitForEvent(orderPaid, { match: { 'data.orderId': ctx.jobId }, timeout: '1d' }),
});

/** The events service on a worker harness's ports, as a worker's `ctx.emit` sends (the bill type subscribes). */
function senderOn(
  h: ReturnType<typeof harness>,
  eventWaits: FakeEventWaits,
  by: string,
  config = testConfig(['echo', 'bill']),
) {
  return createEventSender(
    {
      config,
      catalog: [billSpec],
      store: h.store,
      queue: h.queue,
      scheduler: h.scheduler,
      clock: h.clock,
      log: createLogger({ level: 'error' }),
      journal: h.journal,
      eventWaits,
    },
    by,
  );
}

describe('an event emitted by a deployed worker', () => {
  it('sends the message of the waiting job it wakes, though the waiting type is not in its catalog', async () => {
    const eventWaits = new FakeEventWaits();
    const h = harness({ spec: echoSpec, run: waiter, eventWaits });
    h.store.seed(echoJob('w-route'));
    await h.worker(redelivery('w-route'));
    expect(h.store.peek('w-route')?.state).toBe('waiting');
    // the emitting worker of another type, as eventsFrom([billSpec]) builds it: routes for its
    // own type and its catalog's, the others found by the deployment's queue naming
    const sender = senderOn(h, eventWaits, 'job:pay', testConfig(['pay', 'bill'], { queues: NAMING }));
    h.clock.advance(60_000);
    const before = h.queue.sent.length;
    await sender.send({ name: 'order.paid', id: 'paid-route', data: { orderId: 'w-route', amount: 4 } });
    // woken: due now, and its message sent to its queue (not left to the supervisor's look,
    // 10 minutes on, or to the wait's timeout a day on)
    expect(h.store.peek('w-route')?.runAt).toBe(new Date(h.clock.now()).toISOString());
    expect(h.queue.sent.slice(before)).toContainEqual(
      expect.objectContaining({
        queueUrl: namedRoute(NAMING, 'echo').queueUrl,
        message: { v: 1, id: 'w-route', type: 'echo' },
      }),
    );
  });
});

describe('the creation line', () => {
  it('an event sent before the job was created reaches it by neither side: not by its look, nor by the delivery', async () => {
    // The event's send begins (its time is taken, its match recorded) before the job exists; the
    // job is made and waits before the send reads the waiters. Its look does not match the event
    // (sent before the job was created): the delivery must not either, or whether a job gets an
    // event sent before it was created depends on timing.
    let between: (() => Promise<void>) | undefined;
    class SlowSend extends FakeEventWaits {
      override async recordSent(...args: Parameters<FakeEventWaits['recordSent']>) {
        const first = await super.recordSent(...args);
        await between?.();
        return first;
      }
    }
    const eventWaits = new SlowSend();
    const waiting = harness({ spec: echoSpec, run: waiter, eventWaits });
    const sender = senderOn(waiting, eventWaits, 'job:pay');
    between = async () => {
      between = undefined;
      waiting.clock.advance(1_000);
      waiting.store.seed(echoJob('w-line', { createdAt: new Date(waiting.clock.now()).toISOString() }));
      await waiting.worker(redelivery('w-line'));
      expect(waiting.store.peek('w-line')?.state).toBe('waiting');
    };
    const sentAt = waiting.clock.now();
    await sender.send({ name: 'order.paid', id: 'paid-early', data: { orderId: 'w-line', amount: 1 } });
    expect(between).toBeUndefined();
    const job = waiting.store.peek('w-line');
    expect(Date.parse(job?.createdAt ?? '')).toBeGreaterThan(sentAt);
    // still waiting for an event sent after its creation: not woken by this one
    expect(job).toMatchObject({ state: 'waiting', waitingFor: { kind: 'signal', key: 'event:order.paid' } });
    expect(job?.runAt).not.toBe(new Date(waiting.clock.now()).toISOString());
    await waiting.worker(redelivery('w-line'));
    expect(waiting.store.peek('w-line')).toMatchObject({ state: 'waiting' });
  });
});

/**
 * A worker of `echo` running `run`, whose `ctx.emit` sends through the events service on its own
 * ports (the bill type subscribes), and whose first attempt to record the emit's step dies after
 * the send. `crashed()`: whether that crash happened.
 */
function crashingEmitter(run: NonNullable<HarnessOptions['run']>) {
  const eventWaits = new FakeEventWaits();
  let sender: ReturnType<typeof createEventSender> | undefined;
  const h = harness({
    spec: echoSpec,
    eventWaits,
    events: { send: (event) => (sender as ReturnType<typeof createEventSender>).send(event) },
    run,
  });
  sender = senderOn(h, eventWaits, 'job:echo');
  const record = h.journal.record.bind(h.journal);
  let crash = true;
  h.journal.record = async (input) => {
    if (crash && input.name === 'emit:order.paid') {
      crash = false;
      throw new Error('the attempt died before recording its step');
    }
    return record(input);
  };
  return { h, eventWaits, crashed: () => !crash };
}

describe('an emit sent again after a crash', () => {
  it('makes nothing new: a job created between the first send and the second does not get the event', async () => {
    // one type, two roles: `emit-…` jobs emit order.paid of order `w-resend`, the others wait for theirs
    // (the emitter's first attempt sends the event and dies before recording its step)
    const { h, crashed } = crashingEmitter(async (p, ctx) =>
      ctx.jobId.startsWith('emit-') ? ctx.emit(orderPaid, { orderId: 'w-resend', amount: 2 }) : waiter(p, ctx),
    );
    h.store.seed(echoJob('emit-1'));
    await h.worker(redelivery('emit-1'));
    expect(crashed()).toBe(true);
    // a job of the order is created after that send, and waits
    h.clock.advance(1_000);
    h.store.seed(echoJob('w-resend', { createdAt: new Date(h.clock.now()).toISOString() }));
    await h.worker(redelivery('w-resend'));
    expect(h.store.peek('w-resend')?.state).toBe('waiting');
    // the emitter's next attempt sends the same event (same id) again
    h.clock.advance(10_000);
    await h.worker(redelivery('emit-1'));
    expect(h.store.peek('emit-1')?.state).toBe('succeeded');
    // the event was sent before the waiting job was created: sending it again must not match it
    await h.worker(redelivery('w-resend'));
    expect(h.store.peek('w-resend')).toMatchObject({ state: 'waiting' });
  });
});

describe('two events racing one wait', () => {
  it('the look finds one while the other is delivered: the first outcome written wins, and a replay returns it too', async () => {
    // the wait's look finds `race-a` (sent before the wait); `race-b` is delivered to the waiter
    // between that look and the wait's record of what it found
    let between: (() => Promise<void>) | undefined;
    class Racing extends FakeEventWaits {
      override async firstSince(...args: Parameters<FakeEventWaits['firstSince']>) {
        const found = await super.firstSince(...args);
        await between?.();
        return found;
      }
    }
    const eventWaits = new Racing();
    const h = harness({
      spec: echoSpec,
      eventWaits,
      run: async (_p, ctx) => {
        const got = await ctx.waitForEvent(orderPaid, { match: { 'data.orderId': ctx.jobId }, timeout: '1d' });
        await ctx.sleep('after', '1h');
        return { got: got?.id };
      },
    });
    const sender = senderOn(h, eventWaits, 'job:pay');
    h.store.seed(echoJob('w-race'));
    h.clock.advance(1_000);
    await sender.send({ name: 'order.paid', id: 'race-a', data: { orderId: 'w-race', amount: 1 } });
    between = async () => {
      between = undefined;
      h.clock.advance(1_000);
      await sender.send({ name: 'order.paid', id: 'race-b', data: { orderId: 'w-race', amount: 2 } });
    };
    await h.worker(redelivery('w-race'));
    expect(between).toBeUndefined();
    expect(h.store.peek('w-race')?.waitingFor).toMatchObject({ kind: 'sleep', key: 'after' });
    h.clock.advance(3_600_000);
    await h.worker(redelivery('w-race'));
    // race-b's delivery recorded the outcome first (the inbox's event): the wait and its replay return it
    expect(h.store.peek('w-race')).toMatchObject({ state: 'succeeded', result: { got: 'race-b' } });
  });
});

describe('a wait whose attempt dies between its registration and its suspend', () => {
  it('gets an event sent meanwhile on its next attempt (the delivery found the job running)', async () => {
    const eventWaits = new FakeEventWaits();
    const h = harness({ spec: echoSpec, run: waiter, eventWaits });
    const sender = senderOn(h, eventWaits, 'job:pay');
    h.store.seed(echoJob('w-dies'));
    // registered, looked, its deadline recorded; the suspend write fails: the job is left running
    h.store.failNext('suspend', new Error('the worker died before its suspend write'));
    await h.worker(redelivery('w-dies')).catch(() => undefined);
    expect(eventWaits.calls.map((c) => c.method)).toEqual(['register', 'firstSince']);
    expect(h.store.peek('w-dies')?.state).not.toBe('waiting');
    await sender.send({ name: 'order.paid', id: 'paid-dies', data: { orderId: 'w-dies', amount: 3 } });
    // the message comes back once the lease's visibility runs out
    h.clock.advance(120_000);
    await h.worker(redelivery('w-dies'));
    expect(h.store.peek('w-dies')).toMatchObject({ state: 'succeeded', result: { got: { id: 'paid-dies' } } });
  });
});

describe('an emit whose data is not the same on its next attempt', () => {
  it('fails the job: its subscriber’s job is found with another payload (409)', async () => {
    let amount = 1;
    const { h } = crashingEmitter(async (_p, ctx) => ctx.emit(orderPaid, { orderId: 'o-det', amount: amount++ }));
    h.store.seed(echoJob('emit-det'));
    await h.worker(redelivery('emit-det'));
    h.clock.advance(10_000);
    await h.worker(redelivery('emit-det'));
    expect(h.store.peek('emit-det')).toMatchObject({ state: 'failed' });
    expect(JSON.stringify(h.store.peek('emit-det')?.lastError)).toContain('different type or payload');
    expect(h.store.all().filter((j) => j.type === 'bill')).toHaveLength(1);
  });
});
