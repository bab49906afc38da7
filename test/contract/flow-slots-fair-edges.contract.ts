/**
 * Edge cases of fair share (a limit with `fairBy`): keys with unusual names, many keys waiting at
 * once, tickets beside fair lines, an admitter that knows no fair key. Run on the in-memory fake
 * (test/unit/contract-fakes.test.ts) and on the DynamoDB adapter on DynamoDB Local
 * (test/integration/contract-adapters.test.ts), as the rest of the flow slots contract.
 */
import { describe, expect, it } from 'vitest';
import { MAX_FAIR_KEYS_WAITING, SHARED_FAIR_LINE } from '../../shared/core/fair-share';
import type { FlowSlots, Slot } from '../../shared/core/flow';

const NOW = Date.parse('2026-06-01T00:00:00.000Z');

/** A rank key: `time` as the 15 digits of the real ones, then the job id. */
const r = (time: number, jobId: string) => `${String(time).padStart(15, '0')}#${jobId}`;

export function fairShareEdgesContract(setup: () => Promise<{ slots: FlowSlots }>): void {
  const run = Math.random().toString(36).slice(2, 8);
  let seq = 0;
  /** A fresh fair slot (the type's one, `*`) of `limit` places. */
  const baseOf = (limit: number): Slot => {
    seq += 1;
    return { scope: `fr-${run}-${seq}#0`, key: '*', limit };
  };
  const fairSlot = (base: Slot, fairKey: string): Slot => ({ ...base, fair: { key: fairKey, weightOf: () => 1 } });
  /** `jobId` of fair key `fairKey` asks for a place under a rank standing for `time`. */
  const join = (slots: FlowSlots, base: Slot, fairKey: string, jobId: string, time: number, now = NOW) =>
    slots.acquire({ slot: fairSlot(base, fairKey), jobId, type: 'echo', now, token: 1, rank: r(time, jobId) });

  describe('flow slots: fair share edge cases', () => {
    it('a fair key named like an Object.prototype member ("constructor") takes turns with another key', async () => {
      const { slots } = await setup();
      const base = baseOf(1);
      expect(await join(slots, base, 'h', 'h1', NOW)).toMatchObject({ kind: 'held' });
      // both keys join at NOW: equal share and equal since, so "b" (the lower key) goes first
      await join(slots, base, 'constructor', 'c1', NOW + 10);
      await join(slots, base, 'b', 'b1', NOW + 11);
      await join(slots, base, 'constructor', 'c2', NOW + 12);
      await join(slots, base, 'b', 'b2', NOW + 13);
      expect((await slots.state(base)).waitingByFairKey).toEqual({ constructor: 2, b: 2 });
      const served: string[] = [];
      let holder = 'h1';
      for (let i = 1; i <= 4; i++) {
        await slots.release({ slot: base, jobId: holder });
        const [next] = await slots.admit({ slot: fairSlot(base, 'any'), now: NOW + i });
        holder = next?.jobId as string;
        served.push(holder);
      }
      // equal keys take turns
      expect(served).toEqual(['b1', 'c1', 'b2', 'c2']);
    });

    it('keeps the lines and counts of keys with unusual characters apart, and admits every entry once', async () => {
      const { slots } = await setup();
      const base = baseOf(1);
      const keys = ['a', 'ab', 'a#', 'a#b', '#', ':', 'f1:a', 'f2:ab#', 'wf:a', 'é', '😀', 'x'.repeat(256)];
      expect(await join(slots, base, 'h', 'h0', NOW)).toMatchObject({ kind: 'held' });
      let n = 0;
      const ids = new Map<string, string[]>();
      for (const key of keys) {
        for (let i = 0; i < 2; i++) {
          n += 1;
          const id = `j${String(n).padStart(2, '0')}`;
          ids.set(key, [...(ids.get(key) ?? []), id]);
          expect(await join(slots, base, key, id, NOW + n)).toMatchObject({ kind: 'waiting' });
        }
      }
      const state = await slots.state(base);
      expect(state.waiting).toBe(2 * keys.length);
      expect(state.waitingByFairKey).toEqual(Object.fromEntries(keys.map((k) => [k, 2])));
      for (const key of keys) {
        const line = await slots.line({ slot: fairSlot(base, key), max: 50 });
        expect(line.map((e) => [e.jobId, e.fair])).toEqual((ids.get(key) ?? []).map((id) => [id, key]));
      }
      // drain: each admitted once, with its own key
      const admitted: string[] = [];
      let holder = 'h0';
      for (let i = 1; i <= 2 * keys.length; i++) {
        await slots.release({ slot: base, jobId: holder });
        const [next] = await slots.admit({ slot: fairSlot(base, 'any'), now: NOW + 1000 + i });
        holder = next?.jobId as string;
        admitted.push(holder);
        const held = (await slots.state(base)).holders[0];
        const keyOf = [...ids].find(([, list]) => list.includes(holder))?.[0];
        expect(held?.fair).toBe(keyOf);
      }
      expect(new Set(admitted).size).toBe(2 * keys.length);
      const after = await slots.state(base);
      expect(after.waiting).toBe(0);
      expect(after.waitingByFairKey).toBeUndefined();
    });

    it('takes 800 fair keys of 256 characters waiting at once (a type with many tenants)', async () => {
      const { slots } = await setup();
      const base = baseOf(1);
      expect(await join(slots, base, 'h', 'h0', NOW)).toMatchObject({ kind: 'held' });
      const keys = Array.from({ length: 800 }, (_, i) => `tenant-${String(i).padStart(4, '0')}-`.padEnd(256, 'x'));
      const failures: string[] = [];
      // in batches, so that transaction conflicts on the slot item stay rare
      for (let i = 0; i < keys.length; i += 20) {
        const batch = keys.slice(i, i + 20);
        const out = await Promise.allSettled(batch.map((k, j) => join(slots, base, k, `j${i + j}`, NOW + i + j)));
        for (const o of out) {
          if (o.status === 'rejected') failures.push(String(o.reason?.message ?? o.reason).slice(0, 120));
          else if (o.value.kind !== 'waiting') failures.push(o.value.kind);
        }
      }
      const state = await slots.state(base);
      expect({ failed: failures.length, first: failures[0], waiting: state.waiting }).toEqual({
        failed: 0,
        first: undefined,
        waiting: 800,
      });
      // the first 100 keys have lines of their own; the others share one (the slot item stays small)
      const byKey = state.waitingByFairKey ?? {};
      expect(Object.keys(byKey)).toHaveLength(MAX_FAIR_KEYS_WAITING + 1);
      expect(byKey[SHARED_FAIR_LINE]).toBe(800 - MAX_FAIR_KEYS_WAITING);
      // and every one of them is served, once: the shared line takes its turns as one more key
      await slots.release({ slot: base, jobId: 'h0' });
      const served = new Set<string>();
      for (let i = 0; i < 800; i++) {
        const [one] = await slots.admit({ slot: fairSlot(base, 'any'), now: NOW + 10_000 + i });
        if (one === undefined) break;
        served.add(one.jobId);
        await slots.release({ slot: base, jobId: one.jobId });
      }
      expect(served.size).toBe(800);
      expect(await slots.state(base)).toMatchObject({ holders: [], waiting: 0 });
    }, 240_000);

    it('serves a ticket before an entry of a later rank, whichever key the entry is (fair choice, not the collection head)', async () => {
      const { slots } = await setup();
      const base = baseOf(2);
      // b0 (fair key "b") takes a place; h, a job of the type before it shared fairly, takes the other
      expect(await join(slots, base, 'b', 'b0', NOW)).toEqual({ kind: 'held', fresh: true });
      expect(await slots.acquire({ slot: base, jobId: 'h', type: 'echo', now: NOW, token: 1 })).toEqual({
        kind: 'held',
        fresh: true,
      });
      // t0, another job from before, waits with a ticket written at NOW + 50
      expect(await slots.acquire({ slot: base, jobId: 't0', type: 'echo', now: NOW + 50, token: 1 })).toMatchObject({
        kind: 'waiting',
        ticket: 0,
      });
      // b1 ranks before the ticket, but b runs one already; aa1 runs none, and ranks after the ticket
      await join(slots, base, 'b', 'b1', NOW + 10, NOW + 60);
      await join(slots, base, 'aa', 'aa1', NOW + 100, NOW + 60);
      await slots.release({ slot: base, jobId: 'h' });
      // the entry that would be served is aa1 (fair choice); the ticket is older than it: the ticket goes first
      expect((await slots.admit({ slot: fairSlot(base, 'any'), now: NOW + 200 })).map((a) => a.jobId)).toEqual(['t0']);
    });

    it('an admit by a caller without the fair key (the API raising the limit) still hands the place by the fair rule', async () => {
      const { slots } = await setup();
      const base = baseOf(2);
      await join(slots, base, 'b', 'b0', NOW);
      await join(slots, base, 'aa', 'aa0', NOW);
      await join(slots, base, 'b', 'b1', NOW + 1);
      await join(slots, base, 'aa', 'aa1', NOW + 2);
      await join(slots, base, 'zz', 'zz1', NOW + 3);
      await slots.setLimit({ slot: base, limit: 3, by: 'ops', now: NOW + 5 });
      // b and aa run one each, zz none: zz1 is owed the new place
      expect((await slots.admit({ slot: base, now: NOW + 6 })).map((a) => a.jobId)).toEqual(['zz1']);
    });
  });
}
