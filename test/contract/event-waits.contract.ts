/**
 * The contract of {@link EventWaits}, run against the in-memory fake (test/unit/contract-fakes.test.ts)
 * and the DynamoDB adapter on DynamoDB Local (test/integration/contract-adapters.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { type EventWaits, matchKey } from '../../shared/core/event-waits';

const NOW_S = Math.floor(Date.parse('2026-06-01T00:00:00.000Z') / 1000);

export function eventWaitsContract(setup: () => Promise<EventWaits>): void {
  const run = Math.random().toString(36).slice(2, 8);
  let seq = 0;
  const key = () => matchKey('order.paid', 'orderId', `o-${run}-${++seq}`);

  describe('event waits', () => {
    it('finds the waiters of a key, once each however often they registered, and not those of another key', async () => {
      const waits = await setup();
      const [k, other] = [key(), key()];
      expect(await waits.waiters(k, NOW_S)).toEqual([]);
      const a = { jobId: `a-${run}`, incarnation: 'i1', signal: 'event:paid' };
      const b = { jobId: `b-${run}`, incarnation: 'i1', signal: 'event:paid' };
      await waits.register(k, a, NOW_S + 60);
      await waits.register(k, a, NOW_S + 60);
      await waits.register(k, b, NOW_S + 60);
      await waits.register(other, { ...a, signal: 'event:other' }, NOW_S + 60);
      expect(await waits.waiters(k, NOW_S)).toEqual([a, b]);
      expect(await waits.waiters(other, NOW_S)).toEqual([{ ...a, signal: 'event:other' }]);
    });

    it('leaves out a waiter whose wait has expired', async () => {
      const waits = await setup();
      const k = key();
      await waits.register(k, { jobId: `old-${run}`, incarnation: 'i1', signal: 'event:x' }, NOW_S - 1);
      expect(await waits.waiters(k, NOW_S)).toEqual([]);
    });

    it('keeps a waiter registered again with a later end (a later attempt of its wait)', async () => {
      const waits = await setup();
      const k = key();
      const w = { jobId: `again-${run}`, incarnation: 'i1', signal: 'event:x' };
      await waits.register(k, w, NOW_S - 1);
      await waits.register(k, w, NOW_S + 60);
      expect(await waits.waiters(k, NOW_S)).toEqual([w]);
    });

    it('keeps one record of an event recorded twice at one moment, and orders events of one moment by id', async () => {
      const waits = await setup();
      const k = key();
      const at = '2026-06-01T00:00:05.000Z';
      const b = { id: 'eb', name: 'order.paid', data: { orderId: 'o', n: 2 }, at };
      const a = { id: 'ea', name: 'order.paid', data: { orderId: 'o', n: 1 }, at };
      await waits.recordSent(k, b, NOW_S + 60);
      await waits.recordSent(k, b, NOW_S + 60);
      expect(await waits.firstSince(k, at)).toEqual(b);
      await waits.recordSent(k, a, NOW_S + 60);
      expect(await waits.firstSince(k, '2026-06-01T00:00:00.000Z')).toEqual(a);
    });

    it('keeps the first record of an event sent again later: its first time stands, and is returned', async () => {
      const waits = await setup();
      const k = key();
      const first = { id: 'again', name: 'order.paid', data: { orderId: 'o', n: 1 }, at: '2026-06-01T00:00:01.000Z' };
      expect(await waits.recordSent(k, first, NOW_S + 60)).toEqual(first);
      // a retry of the send, a second later: the same event, a later time
      const retry = { ...first, at: '2026-06-01T00:00:02.000Z' };
      expect(await waits.recordSent(k, retry, NOW_S + 60)).toEqual(first);
      // a job created between the two sends does not find it
      expect(await waits.firstSince(k, '2026-06-01T00:00:01.500Z')).toBeUndefined();
      expect(await waits.firstSince(k, '2026-06-01T00:00:00.000Z')).toEqual(first);
    });

    it('gives the first event sent at or after a moment, and none sent only before it', async () => {
      const waits = await setup();
      const k = key();
      expect(await waits.firstSince(k, '2026-06-01T00:00:00.000Z')).toBeUndefined();
      const early = { id: 'e1', name: 'order.paid', data: { orderId: 'o', n: 1 }, at: '2026-05-31T23:59:59.999Z' };
      const first = { id: 'e2', name: 'order.paid', data: { orderId: 'o', n: 2 }, at: '2026-06-01T00:00:01.000Z' };
      const second = { id: 'e3', name: 'order.paid', data: { orderId: 'o', n: 3 }, at: '2026-06-01T00:00:02.000Z' };
      await waits.recordSent(k, early, NOW_S + 60);
      expect(await waits.firstSince(k, '2026-06-01T00:00:00.000Z')).toBeUndefined();
      await waits.recordSent(k, second, NOW_S + 60);
      await waits.recordSent(k, first, NOW_S + 60);
      expect(await waits.firstSince(k, '2026-06-01T00:00:00.000Z')).toEqual(first);
      expect(await waits.firstSince(k, '2026-06-01T00:00:01.000Z')).toEqual(first);
      expect(await waits.firstSince(k, '2026-06-01T00:00:01.001Z')).toEqual(second);
      // the waiters are not events, and events are not waiters
      expect(await waits.waiters(k, NOW_S)).toEqual([]);
    });
  });
}
