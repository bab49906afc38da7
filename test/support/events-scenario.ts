/**
 * One scenario of events through the testing kit's platform and typed client, run in memory
 * (test/unit/events-memory.test.ts) and on local AWS (test/integration/events.test.ts): the same
 * calls, the same answers.
 */
import { expect } from 'vitest';
import { eventJobId } from '../../shared/core/events';
import type { TestPlatform } from '../local-aws/testing';
import { eventSpecs, ran } from './event-jobs';

export async function eventsScenario(platform: TestPlatform): Promise<void> {
  for (const list of Object.values(ran)) list.length = 0;
  const orrery = platform.client(eventSpecs);

  const placed = await orrery.sendEvent('order.placed', { orderId: 'o1', total: 12 }, { id: 'order-o1' });
  expect(placed.jobs.map((j) => [j.type, j.id, j.status])).toEqual([
    ['send-receipt', eventJobId('order.placed', 'order-o1', 'send-receipt'), 'created'],
    ['bill-order', eventJobId('order.placed', 'order-o1', 'bill-order'), 'created'],
  ]);
  // a filter turns a free order down: only bill-order gets a job
  const free = await orrery.sendEvent('order.placed', { orderId: 'o2', total: 0 }, { id: 'order-o2' });
  expect(free.jobs.map((j) => j.type)).toEqual(['bill-order']);
  const batch = await orrery.sendEvents([
    { name: 'user.signed-up', id: 'u1', data: { email: 'a@b.co' } },
    { name: 'user.signed-up', id: 'u2', data: { email: 'c@d.co' } },
  ]);
  expect(batch.map((e) => e.jobs.length)).toEqual([1, 1]);

  await platform.runUntilIdle();

  expect(ran['send-receipt']).toEqual([{ orderId: 'o1' }]);
  expect(ran['bill-order']).toEqual(
    expect.arrayContaining([
      { orderId: 'o1', total: 12 },
      { orderId: 'o2', total: 0 },
    ]),
  );
  expect(ran.welcome).toEqual(expect.arrayContaining([{ email: 'a@b.co' }, { email: 'c@d.co' }]));

  // sent again: nothing new is made, and nothing runs again
  const again = await orrery.sendEvent('order.placed', { orderId: 'o1', total: 12 }, { id: 'order-o1' });
  expect(again.jobs.map((j) => [j.status, j.state])).toEqual([
    ['existing', 'succeeded'],
    ['existing', 'succeeded'],
  ]);
  await platform.runUntilIdle();
  expect(ran['send-receipt']).toHaveLength(1);

  const found = await orrery.getEvent('order-o1');
  expect(found.jobs.map((j) => [j.type, j.state])).toEqual([
    ['send-receipt', 'succeeded'],
    ['bill-order', 'succeeded'],
  ]);
  await expect(orrery.sendEvent('order.shipped', {})).rejects.toMatchObject({ status: 400, code: 'unknown_event' });
}
