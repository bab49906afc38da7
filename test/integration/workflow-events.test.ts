/**
 * On DynamoDB Local, through the real adapters (job store, journal, match index): `ctx.emit` and
 * `ctx.waitForEvent` with the API's events and signals services. An event sent after the wait
 * wakes it; one sent before the wait but after the job was created is not lost; one sent before
 * the job was created, or with another value, is not matched; the timeout returns null; an emit
 * sent again (its attempt died before its record) makes one job. (The same on the in-memory
 * ports: test/unit/workflow-events.test.ts.)
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { EventsService } from '../../shared/api/events-service';
import { JobsService } from '../../shared/api/jobs-service';
import { DynamoEventWaits } from '../../shared/aws/dynamo-event-waits';
import { systemClock } from '../../shared/core/clock';
import { defineEvent, subscribe } from '../../shared/core/events';
import { defineJobType } from '../../shared/core/job-type';
import { createLogger } from '../../shared/logger';
import type { JobContext } from '../../shared/runtime/job-definition';
import { useJobTable } from '../local-aws/job-table';
import { FakeJobScheduler, testConfig } from '../support/fakes';
import { dynamoWorker } from './workflow-worker-harness';

const { dynamo, tableName } = useJobTable('workflow-events');
const run = Math.random().toString(36).slice(2, 8);

const orderPaid = defineEvent('order.paid', z.object({ orderId: z.string(), amount: z.number() }), {
  matchOn: ['orderId'],
});
const billSpec = defineJobType({
  type: 'bill',
  payload: z.object({ orderId: z.string(), amount: z.number() }),
  on: [subscribe(orderPaid)],
});
const spec = defineJobType({
  type: 'order-flow',
  payload: z.object({}),
  timeoutMs: 30_000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 1000 } },
});

function setup(handler: (payload: unknown, ctx: JobContext) => Promise<unknown>) {
  const eventWaits = new DynamoEventWaits(dynamo, tableName);
  const sends: string[] = [];
  let events: EventsService | undefined;
  const h = dynamoWorker({
    dynamo,
    tableName,
    spec,
    run: handler,
    eventWaits,
    events: {
      async send(event) {
        sends.push(event.id);
        await events?.send(event, 'job:it');
      },
    },
  });
  const jobs = new JobsService({
    config: testConfig([spec.type, 'bill'], { tableName }),
    catalog: [billSpec],
    store: h.store,
    queue: h.queue,
    scheduler: new FakeJobScheduler(),
    clock: systemClock,
    log: createLogger({ level: 'error' }),
  });
  events = new EventsService({
    jobs,
    specs: [billSpec],
    waits: {
      index: eventWaits,
      deliver: (waiter, event) => h.signals.deliverEvent(waiter, event),
      clock: systemClock,
      retentionDays: 1,
    },
  });
  const send = (orderId: string, id: string) =>
    events.send({ name: 'order.paid', id: `${id}-${run}`, data: { orderId, amount: 5 } });
  return { h, send, sends };
}

const waiter = (timeout: string) => async (_p: unknown, ctx: JobContext) => ({
  got: await ctx.waitForEvent(orderPaid, { match: { 'data.orderId': ctx.jobId }, timeout }),
});

describe('ctx.waitForEvent on DynamoDB Local', () => {
  it('returns an event sent after the wait began: the event wakes the job', async () => {
    const { h, send } = setup(waiter('1h'));
    const id = `we-1-${run}`;
    await h.create(id, { payload: {} });
    await h.deliver(id);
    expect(await h.store.get(id)).toMatchObject({ state: 'waiting', waitingFor: { key: 'event:order.paid' } });
    await send(id, 'pay-1');
    expect(h.queue.sent.map((s) => s.message)).toContainEqual({ v: 1, id, type: spec.type });
    await h.deliver(id);
    expect(await h.store.get(id)).toMatchObject({
      state: 'succeeded',
      result: { got: { id: `pay-1-${run}`, name: 'order.paid', data: { orderId: id, amount: 5 } } },
    });
  });

  it('returns an event sent after the job was created and before its wait: not lost', async () => {
    const { h, send } = setup(waiter('1h'));
    const id = `we-2-${run}`;
    await h.create(id, { payload: {} });
    await sleep(5);
    await send(id, 'pay-2');
    await h.deliver(id);
    expect(await h.store.get(id)).toMatchObject({ state: 'succeeded', result: { got: { id: `pay-2-${run}` } } });
  });

  it('does not match an event sent before the job was created, nor one of another value; times out to null', async () => {
    const { h, send } = setup(waiter('2s'));
    const id = `we-3-${run}`;
    await send(id, 'pay-early');
    await sleep(5);
    await h.create(id, { payload: {} });
    await h.deliver(id);
    expect((await h.store.get(id))?.state).toBe('waiting');
    await send(`${id}-other`, 'pay-other');
    expect((await h.store.get(id))?.state).toBe('waiting');
    await sleep(2_100);
    await h.deliver(id);
    expect(await h.store.get(id)).toMatchObject({ state: 'succeeded', result: { got: null } });
  });
});

describe('ctx.emit on DynamoDB Local', () => {
  it('an emit sent again after its attempt died before its record makes one job', async () => {
    const { h, sends } = setup(async (_p, ctx) => ctx.emit(orderPaid, { orderId: 'o-emit', amount: 3 }));
    const record = h.journal.record.bind(h.journal);
    let fail = true;
    h.journal.record = async (input) => {
      if (fail && input.name === 'emit:order.paid') {
        fail = false;
        throw new Error('the attempt died before recording its step');
      }
      return record(input);
    };
    const id = `em-1-${run}`;
    await h.create(id, { payload: {} });
    await h.deliver(id);
    await sleep(1_100);
    await h.deliver(id);
    expect((await h.store.get(id))?.state).toBe('succeeded');
    expect(sends).toHaveLength(2);
    expect(sends[0]).toBe(sends[1]);
    const bills = h.queue.sent.filter((s) => s.message.type === 'bill').map((s) => s.message.id);
    expect(new Set(bills).size).toBe(1);
    const bill = await h.store.get(bills[0] as string);
    expect(bill).toMatchObject({ type: 'bill', payload: { orderId: 'o-emit', amount: 3 } });
  });
});
