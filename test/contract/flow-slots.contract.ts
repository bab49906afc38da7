/**
 * The contract of {@link FlowSlots}, run against the in-memory fake
 * (test/unit/contract-fakes.test.ts) and the DynamoDB adapter on DynamoDB Local
 * (test/integration/contract-adapters.test.ts). Every case checks the slot's whole state after
 * the calls, not only what the calls returned.
 */
import { describe, expect, it } from 'vitest';
import type { FlowSlots, Slot, SlotState } from '../../shared/core/flow';

export interface FlowSlotsLeg {
  slots: FlowSlots;
  /** Takes a ticket the way a job does and stops before writing its ticket item (the job died). */
  orphanTicket(slot: Slot): Promise<void>;
}

const NOW = Date.parse('2026-06-01T00:00:00.000Z');

/** The state with holders as their ids. */
async function stateOf(slots: FlowSlots, slot: Slot): Promise<Omit<SlotState, 'holders'> & { holders: string[] }> {
  const state = await slots.state(slot);
  return { ...state, holders: state.holders.map((h) => h.jobId) };
}

export function flowSlotsContract(setup: () => Promise<FlowSlotsLeg>): void {
  const run = Math.random().toString(36).slice(2, 8);
  let seq = 0;
  const slotOf = (limit: number, key = 'k'): Slot => {
    seq += 1;
    return { scope: `t-${run}-${seq}#0`, key, limit };
  };
  const take = (slots: FlowSlots, slot: Slot, jobId: string, ticket?: number, token = 1) =>
    slots.acquire({ slot, jobId, type: 'echo', now: NOW, token, ...(ticket === undefined ? {} : { ticket }) });

  /** A slot of limit 1 whose place a gave back, handed to b (ticket 0) at NOW + 1. */
  const handedToB = async (slots: FlowSlots) => {
    const slot = slotOf(1);
    await take(slots, slot, 'a');
    await take(slots, slot, 'b'); // ticket 0
    await slots.release({ slot, jobId: 'a', token: 1 });
    await slots.admit({ slot, now: NOW + 1 });
    return slot;
  };

  describe('flow slots', () => {
    it('gives free slots up to the limit, then tickets in order, naming the holders', async () => {
      const { slots } = await setup();
      const slot = slotOf(2);
      expect(await take(slots, slot, 'a')).toEqual({ kind: 'held', fresh: true });
      expect(await take(slots, slot, 'b')).toEqual({ kind: 'held', fresh: true });
      const c = await take(slots, slot, 'c');
      expect(c).toEqual({ kind: 'waiting', ticket: 0, first: true, holders: expect.any(Array) });
      expect(c.kind === 'waiting' && c.holders).toEqual([
        { jobId: 'a', since: NOW, token: 1 },
        { jobId: 'b', since: NOW, token: 1 },
      ]);
      expect(await take(slots, slot, 'd')).toMatchObject({ kind: 'waiting', ticket: 1, first: false });
      expect(await stateOf(slots, slot)).toEqual({ holders: ['a', 'b'], waiting: 2, issued: 2, admitted: 0 });
    });

    it('is idempotent: a holder taking again keeps its one slot, a waiter giving its ticket keeps its place', async () => {
      const { slots } = await setup();
      const slot = slotOf(1);
      await take(slots, slot, 'a');
      expect(await slots.acquire({ slot, jobId: 'a', type: 'echo', now: NOW + 9, token: 1 })).toEqual({
        kind: 'held',
        fresh: false,
      });
      expect((await slots.state(slot)).holders).toEqual([{ jobId: 'a', since: NOW + 9, token: 1 }]);
      expect(await take(slots, slot, 'b')).toMatchObject({ kind: 'waiting', ticket: 0 });
      expect(await take(slots, slot, 'b', 0)).toMatchObject({ kind: 'waiting', ticket: 0, first: true });
      expect(await stateOf(slots, slot)).toEqual({ holders: ['a'], waiting: 1, issued: 1, admitted: 0 });
    });

    it("moves a holder's entry to a newer attempt, and lets only that attempt give it back", async () => {
      const { slots } = await setup();
      const slot = slotOf(1);
      await take(slots, slot, 'a', undefined, 1);
      // the retry's attempt 2 takes the slot over from attempt 1, without a second place
      expect(await take(slots, slot, 'a', undefined, 2)).toEqual({ kind: 'held', fresh: false });
      // attempt 1, ending late, cannot free it; nor can a stale delivery for attempt 1 take it back
      expect(await slots.release({ slot, jobId: 'a', token: 1 })).toBe(false);
      expect(await take(slots, slot, 'a', undefined, 1)).toEqual({ kind: 'held', fresh: false });
      expect((await slots.state(slot)).holders).toEqual([{ jobId: 'a', since: NOW, token: 2 }]);
      expect(await slots.release({ slot, jobId: 'a', token: 2 })).toBe(true);
      // without a token (a finished job's slot), any attempt's entry goes
      await take(slots, slot, 'b', undefined, 7);
      expect(await slots.release({ slot, jobId: 'b' })).toBe(true);
      expect(await stateOf(slots, slot)).toEqual({ holders: [], waiting: 0, issued: 0, admitted: 0 });
    });

    it('lets a job handed a slot take it for its attempt with its ticket', async () => {
      const { slots } = await setup();
      const slot = await handedToB(slots);
      expect((await slots.state(slot)).holders).toEqual([{ jobId: 'b', since: NOW + 1, token: 0 }]);
      expect(await take(slots, slot, 'b', 0, 1)).toEqual({ kind: 'held', fresh: false });
      expect((await slots.state(slot)).holders).toEqual([{ jobId: 'b', since: NOW, token: 1 }]);
    });

    it("a second receipt of a waiter's message, for the same attempt, takes the place over again: one place, moved to its time", async () => {
      const { slots } = await setup();
      const slot = await handedToB(slots);
      const again = (now: number) => slots.acquire({ slot, jobId: 'b', type: 'echo', now, token: 1, ticket: 0 });
      expect(await again(NOW + 2)).toEqual({ kind: 'held', fresh: false });
      expect(await again(NOW + 9)).toEqual({ kind: 'held', fresh: false });
      expect(await stateOf(slots, slot)).toEqual({ holders: ['b'], waiting: 0, issued: 1, admitted: 1 });
      expect((await slots.state(slot)).holders).toEqual([{ jobId: 'b', since: NOW + 9, token: 1 }]);
      // an older attempt's receipt changes nothing
      expect(await slots.acquire({ slot, jobId: 'b', type: 'echo', now: NOW + 20, token: 0, ticket: 0 })).toEqual({
        kind: 'held',
        fresh: false,
      });
      expect((await slots.state(slot)).holders).toEqual([{ jobId: 'b', since: NOW + 9, token: 1 }]);
    });

    it('with wait: false, takes a free slot, or answers busy with the holders and takes no ticket', async () => {
      const { slots } = await setup();
      const slot = slotOf(1);
      const noWait = (jobId: string) => slots.acquire({ slot, jobId, type: 'echo', now: NOW, token: 1, wait: false });
      expect(await noWait('a')).toEqual({ kind: 'held', fresh: true });
      expect(await noWait('a')).toEqual({ kind: 'held', fresh: false });
      expect(await noWait('b')).toEqual({ kind: 'busy', holders: [{ jobId: 'a', since: NOW, token: 1 }] });
      expect(await stateOf(slots, slot)).toEqual({ holders: ['a'], waiting: 0, issued: 0, admitted: 0 });
      // a line also turns it away, even with a free place: it may not pass a waiting ticket
      expect(await take(slots, slot, 'c')).toMatchObject({ kind: 'waiting', ticket: 0 });
      await slots.release({ slot, jobId: 'a' });
      expect(await noWait('d')).toMatchObject({ kind: 'busy' });
      expect(await stateOf(slots, slot)).toEqual({ holders: [], waiting: 1, issued: 1, admitted: 0 });
    });

    it('releases only a slot the job holds', async () => {
      const { slots } = await setup();
      const slot = slotOf(2);
      await take(slots, slot, 'a');
      expect(await slots.release({ slot, jobId: 'a' })).toBe(true);
      expect(await slots.release({ slot, jobId: 'a' })).toBe(false);
      expect(await slots.release({ slot, jobId: 'never' })).toBe(false);
      expect(await stateOf(slots, slot)).toEqual({ holders: [], waiting: 0, issued: 0, admitted: 0 });
    });

    it('lets no newcomer pass a waiting ticket: a freed slot goes to the oldest ticket', async () => {
      const { slots } = await setup();
      const slot = slotOf(1);
      await take(slots, slot, 'a');
      await take(slots, slot, 'b'); // ticket 0
      await slots.release({ slot, jobId: 'a' });
      // the slot is free, but b waits: c queues behind it
      expect(await take(slots, slot, 'c')).toMatchObject({ kind: 'waiting', ticket: 1, first: false });
      expect(await slots.admit({ slot, now: NOW + 5 })).toEqual([{ jobId: 'b', type: 'echo', ticket: 0 }]);
      expect(await stateOf(slots, slot)).toEqual({ holders: ['b'], waiting: 1, issued: 2, admitted: 1 });
      // handed its slot at the admit's time
      expect((await slots.state(slot)).holders).toEqual([{ jobId: 'b', since: NOW + 5, token: 0 }]);
      // full again: nothing more to admit
      expect(await slots.admit({ slot, now: NOW })).toEqual([]);
      // b, handed its slot, holds it when its message comes
      expect(await take(slots, slot, 'b', 0)).toEqual({ kind: 'held', fresh: false });
      await slots.release({ slot, jobId: 'b' });
      expect(await slots.admit({ slot, now: NOW })).toEqual([{ jobId: 'c', type: 'echo', ticket: 1 }]);
      expect(await stateOf(slots, slot)).toEqual({ holders: ['c'], waiting: 0, issued: 2, admitted: 2 });
      // no ticket waits any more: a newcomer waits only for the slot
      expect(await take(slots, slot, 'd')).toMatchObject({ kind: 'waiting', ticket: 2, first: true });
    });

    it('admits as many tickets as there are free slots, in ticket order', async () => {
      const { slots } = await setup();
      const slot = slotOf(3);
      for (const id of ['a', 'b', 'c', 'w0', 'w1', 'w2', 'w3']) await take(slots, slot, id);
      await slots.release({ slot, jobId: 'a' });
      await slots.release({ slot, jobId: 'c' });
      expect((await slots.admit({ slot, now: NOW })).map((a) => a.jobId)).toEqual(['w0', 'w1']);
      expect(await stateOf(slots, slot)).toEqual({ holders: ['b', 'w0', 'w1'], waiting: 2, issued: 4, admitted: 2 });
    });

    it('tells onAdmitted of each admission as it is made, in order, before the next', async () => {
      const { slots } = await setup();
      const slot = slotOf(2);
      for (const id of ['a', 'b', 'w0', 'w1', 'w2']) await take(slots, slot, id);
      await slots.release({ slot, jobId: 'a' });
      await slots.release({ slot, jobId: 'b' });
      const told: string[] = [];
      const admitted = await slots.admit({
        slot,
        now: NOW,
        onAdmitted: async (one) => {
          // the slot already shows this one holding its place, and not yet the next
          told.push(`${one.jobId}:${(await slots.state(slot)).holders.map((h) => h.jobId).join(',')}`);
        },
      });
      expect(admitted.map((a) => a.jobId)).toEqual(['w0', 'w1']);
      expect(told).toEqual(['w0:w0', 'w1:w0,w1']);
    });

    it('gives a job whose ticket was passed a new one at the back', async () => {
      const { slots } = await setup();
      const slot = slotOf(1);
      await take(slots, slot, 'a');
      await take(slots, slot, 'b'); // ticket 0
      await take(slots, slot, 'c'); // ticket 1
      await slots.release({ slot, jobId: 'a' });
      await slots.admit({ slot, now: NOW }); // b
      // c comes with a ticket that is not its own to keep any more (e.g. a stale message)
      expect(await take(slots, slot, 'c', 0)).toMatchObject({ kind: 'waiting', ticket: 2 });
      expect(await stateOf(slots, slot)).toMatchObject({ holders: ['b'], issued: 3, admitted: 1 });
    });

    it('moves past a ticket whose job died before writing it, and admits the next', async () => {
      const leg = await setup();
      const slot = slotOf(1);
      await take(leg.slots, slot, 'a');
      await leg.orphanTicket(slot); // ticket 0, no job behind it
      await take(leg.slots, slot, 'b'); // ticket 1
      await leg.slots.release({ slot, jobId: 'a' });
      expect(await leg.slots.admit({ slot, now: NOW })).toEqual([{ jobId: 'b', type: 'echo', ticket: 1 }]);
      expect(await stateOf(leg.slots, slot)).toEqual({ holders: ['b'], waiting: 0, issued: 2, admitted: 2 });
    });

    it('hands a slot to each ticket once, even two tickets of one job (a duplicate delivery)', async () => {
      const { slots } = await setup();
      const slot = slotOf(2);
      await take(slots, slot, 'a');
      await take(slots, slot, 'b');
      await take(slots, slot, 'c'); // ticket 0
      await take(slots, slot, 'c'); // a duplicate delivery of c: ticket 1
      await slots.release({ slot, jobId: 'a' });
      expect(await slots.admit({ slot, now: NOW })).toEqual([{ jobId: 'c', type: 'echo', ticket: 0 }]);
      expect(await stateOf(slots, slot)).toEqual({ holders: ['b', 'c'], waiting: 1, issued: 2, admitted: 1 });
      // c's second ticket passes once a slot is free; c already holds one, so it takes no other
      await slots.release({ slot, jobId: 'b' });
      expect(await slots.admit({ slot, now: NOW })).toEqual([{ jobId: 'c', type: 'echo', ticket: 1 }]);
      expect(await stateOf(slots, slot)).toEqual({ holders: ['c'], waiting: 0, issued: 2, admitted: 2 });
    });

    it('a second ticket of a holder hands no place: the place goes on to the next ticket in the same admission', async () => {
      const { slots } = await setup();
      const slot = slotOf(2);
      await take(slots, slot, 'a');
      await take(slots, slot, 'b');
      await take(slots, slot, 'c'); // ticket 0
      await take(slots, slot, 'c'); // a duplicate delivery of c: ticket 1
      await take(slots, slot, 'd'); // ticket 2
      await slots.release({ slot, jobId: 'a' });
      expect((await slots.admit({ slot, now: NOW })).map((a) => a.jobId)).toEqual(['c']);
      // b's place: c's second ticket passes (c takes no other place), and d is handed the place.
      // This admission is the only one b's give-back makes, and d saw the slot full when it
      // joined: if it stopped after c's ticket, d would wait beside a free place.
      await slots.release({ slot, jobId: 'b' });
      expect((await slots.admit({ slot, now: NOW })).map((a) => a.jobId)).toEqual(['c', 'd']);
      expect(await stateOf(slots, slot)).toEqual({ holders: ['c', 'd'], waiting: 0, issued: 3, admitted: 3 });
    });

    it('counts each key of a limit on its own', async () => {
      const { slots } = await setup();
      const one = slotOf(1, 'tenant-1');
      const two = { ...one, key: 'tenant-2' };
      expect(await take(slots, one, 'a')).toMatchObject({ kind: 'held' });
      expect(await take(slots, two, 'b')).toMatchObject({ kind: 'held' });
      expect(await take(slots, one, 'c')).toMatchObject({ kind: 'waiting' });
      expect(await stateOf(slots, two)).toEqual({ holders: ['b'], waiting: 0, issued: 0, admitted: 0 });
    });

    it('never gives more slots than the limit to jobs asking at once', async () => {
      const { slots } = await setup();
      const slot = slotOf(3);
      const ids = Array.from({ length: 16 }, (_, i) => `j${i}`);
      const results = await Promise.all(ids.map((id) => take(slots, slot, id)));
      const held = results.filter((r) => r.kind === 'held').length;
      const tickets = results.flatMap((r) => (r.kind === 'waiting' ? [r.ticket ?? -1] : [])).sort((a, b) => a - b);
      expect(held).toBe(3);
      expect(tickets).toEqual(Array.from({ length: 13 }, (_, i) => i));
      const state = await stateOf(slots, slot);
      expect(state).toMatchObject({ waiting: 13, issued: 13, admitted: 0 });
      expect(state.holders).toHaveLength(3);
      // and releasing and admitting at once never over-fills it
      await Promise.all(state.holders.map((jobId) => slots.release({ slot, jobId })));
      const admitted = (await Promise.all([1, 2, 3].map(() => slots.admit({ slot, now: NOW })))).flat();
      expect(admitted.map((a) => a.ticket ?? -1).sort((a, b) => a - b)).toEqual([0, 1, 2]);
      expect((await stateOf(slots, slot)).holders).toHaveLength(3);
    });

    describe('ranked line (a type with priorities)', () => {
      /** A rank key: `rank` as the 15 digits of the real ones, then the job id. */
      const r = (rank: number, jobId: string) => `${String(rank).padStart(15, '0')}#${jobId}`;
      const join = (slots: FlowSlots, slot: Slot, jobId: string, rank: number, inLine = false) =>
        slots.acquire({
          slot,
          jobId,
          type: 'echo',
          now: NOW,
          token: 1,
          rank: r(rank, jobId),
          ...(inLine ? { waitsAs: r(rank, jobId) } : {}),
        });

      it('hands a freed place to the lowest rank, whatever the order the jobs joined in', async () => {
        const { slots } = await setup();
        const slot = slotOf(1);
        expect(await join(slots, slot, 'a', 50)).toEqual({ kind: 'held', fresh: true });
        const c = await join(slots, slot, 'c', 30);
        expect(c).toEqual({
          kind: 'waiting',
          rank: r(30, 'c'),
          first: true,
          holders: [{ jobId: 'a', since: NOW, token: 1 }],
        });
        // b ranks ahead of c: it heads the line now
        expect(await join(slots, slot, 'b', 10)).toMatchObject({ kind: 'waiting', rank: r(10, 'b'), first: true });
        expect(await join(slots, slot, 'd', 20)).toMatchObject({ kind: 'waiting', rank: r(20, 'd'), first: false });
        expect(await stateOf(slots, slot)).toEqual({ holders: ['a'], waiting: 3, issued: 0, admitted: 0 });
        await slots.release({ slot, jobId: 'a' });
        expect(await slots.admit({ slot, now: NOW + 5 })).toEqual([{ jobId: 'b', type: 'echo', rank: r(10, 'b') }]);
        expect((await slots.state(slot)).holders).toEqual([{ jobId: 'b', since: NOW + 5, token: 0 }]);
        // full again: nothing more
        expect(await slots.admit({ slot, now: NOW })).toEqual([]);
        await slots.release({ slot, jobId: 'b' });
        expect((await slots.admit({ slot, now: NOW })).map((a) => a.jobId)).toEqual(['d']);
        await slots.release({ slot, jobId: 'd' });
        expect((await slots.admit({ slot, now: NOW })).map((a) => a.jobId)).toEqual(['c']);
        expect(await stateOf(slots, slot)).toEqual({ holders: ['c'], waiting: 0, issued: 0, admitted: 0 });
        // the line is empty: a newcomer waits only for the place
        await slots.release({ slot, jobId: 'c' });
        expect(await join(slots, slot, 'e', 99)).toEqual({ kind: 'held', fresh: true });
      });

      it('lets no newcomer take a free place while the line waits, nor a no-wait singleton', async () => {
        const { slots } = await setup();
        const slot = slotOf(1);
        await join(slots, slot, 'a', 1);
        await join(slots, slot, 'b', 2);
        await slots.release({ slot, jobId: 'a' });
        // the place is free, but b waits: c joins, ranked by its own rank (ahead of b here: its head)
        expect(await join(slots, slot, 'c', 0)).toMatchObject({ kind: 'waiting', first: true });
        expect(await take(slots, slot, 'd')).toMatchObject({ kind: 'waiting', ticket: 0 });
        expect(await slots.acquire({ slot, jobId: 'e', type: 'echo', now: NOW, token: 1, wait: false })).toMatchObject({
          kind: 'busy',
        });
        expect(await stateOf(slots, slot)).toEqual({ holders: [], waiting: 3, issued: 1, admitted: 0 });
        // both lines wait (a scope shared with a type without priorities): the older goes first,
        // the ranks (the times they stand for) before d's ticket (written now)
        expect((await slots.admit({ slot, now: NOW })).map((a) => a.jobId)).toEqual(['c']);
        await slots.release({ slot, jobId: 'c' });
        expect((await slots.admit({ slot, now: NOW })).map((a) => a.jobId)).toEqual(['b']);
        await slots.release({ slot, jobId: 'b' });
        expect((await slots.admit({ slot, now: NOW })).map((a) => a.jobId)).toEqual(['d']);
      });

      it('is idempotent: a join sent again keeps one entry, one count and one admission', async () => {
        const { slots } = await setup();
        const slot = slotOf(1);
        await join(slots, slot, 'a', 1);
        expect(await join(slots, slot, 'b', 5)).toMatchObject({ kind: 'waiting', rank: r(5, 'b'), first: true });
        // the same join again (a lost answer, or a duplicate delivery before its wait was written)
        expect(await join(slots, slot, 'b', 5)).toMatchObject({ kind: 'waiting', rank: r(5, 'b'), first: true });
        expect(await stateOf(slots, slot)).toEqual({ holders: ['a'], waiting: 1, issued: 0, admitted: 0 });
        // a delivery that knows it waits reads, and is told it still does
        expect(await join(slots, slot, 'b', 5, true)).toMatchObject({ kind: 'waiting', rank: r(5, 'b'), first: true });
        await slots.release({ slot, jobId: 'a' });
        expect((await slots.admit({ slot, now: NOW })).map((a) => a.jobId)).toEqual(['b']);
        expect(await slots.admit({ slot, now: NOW })).toEqual([]);
        // handed its place, b takes it over for its attempt
        expect(await join(slots, slot, 'b', 5, true)).toEqual({ kind: 'held', fresh: false });
        expect(await stateOf(slots, slot)).toEqual({ holders: ['b'], waiting: 0, issued: 0, admitted: 0 });
      });

      it('lets tickets taken after a ranked entry joined pass it only a bounded number of times (a scope shared with a type without priorities)', async () => {
        const { slots } = await setup();
        const slot = slotOf(1);
        await join(slots, slot, 'h', 50);
        // a waits in the ranked line, due long before anything else here
        expect(await join(slots, slot, 'a', 0)).toMatchObject({ kind: 'waiting', first: true });
        // jobs of a type without priorities keep coming, one per place freed: each takes a ticket
        let holder = 'h';
        const served: string[] = [];
        for (let i = 0; i < 5 && holder !== 'a'; i++) {
          await take(slots, slot, `b${i}`);
          await slots.release({ slot, jobId: holder });
          holder = (await slots.admit({ slot, now: NOW }))[0]?.jobId ?? 'none';
          served.push(holder);
        }
        // Broken: every admission serves the tickets first, so a is passed by each of them, for
        // as long as they come: the ranked line's starvation bound does not hold in a shared scope
        expect(served).toContain('a');
      });

      it('lists the line in the order it will be served: tickets, then entries by rank', async () => {
        const { slots } = await setup();
        const slot = slotOf(1);
        await join(slots, slot, 'h', 1);
        await join(slots, slot, 'c', 30);
        await join(slots, slot, 'b', 10);
        await take(slots, slot, 't0');
        expect(await slots.line({ slot, max: 50 })).toEqual([
          { jobId: 't0', type: 'echo', ticket: 0 },
          { jobId: 'b', type: 'echo', rank: r(10, 'b') },
          { jobId: 'c', type: 'echo', rank: r(30, 'c') },
        ]);
        expect((await slots.line({ slot, max: 2 })).map((e) => e.jobId)).toEqual(['t0', 'b']);
        await slots.release({ slot, jobId: 'h' });
        // b's rank stands for a time before t0's ticket was written: b goes first
        expect((await slots.admit({ slot, now: NOW })).map((e) => e.jobId)).toEqual(['b']);
        expect((await slots.line({ slot, max: 50 })).map((e) => e.jobId)).toEqual(['t0', 'c']);
      });

      it('a job in line twice (under two ranks) is handed one place, and the places freed with it go on to the next', async () => {
        const { slots } = await setup();
        const slot = slotOf(2);
        await join(slots, slot, 'a', 1);
        await join(slots, slot, 'b', 2);
        // c joins, and joins again under a later rank (a delivery that did not know it waited)
        expect(await join(slots, slot, 'c', 10)).toMatchObject({ kind: 'waiting' });
        expect(await join(slots, slot, 'c', 20)).toMatchObject({ kind: 'waiting' });
        await join(slots, slot, 'd', 30);
        await join(slots, slot, 'e', 40);
        expect(await stateOf(slots, slot)).toEqual({ holders: ['a', 'b'], waiting: 4, issued: 0, admitted: 0 });
        // both places freed together: c is handed one (its second entry is used up with it) and d the other
        await slots.release({ slot, jobId: 'a' });
        await slots.release({ slot, jobId: 'b' });
        expect((await slots.admit({ slot, now: NOW })).map((a) => a.jobId)).toEqual(['c', 'c', 'd']);
        expect(await stateOf(slots, slot)).toEqual({ holders: ['c', 'd'], waiting: 1, issued: 0, admitted: 0 });
        await slots.release({ slot, jobId: 'c' });
        expect((await slots.admit({ slot, now: NOW })).map((a) => a.jobId)).toEqual(['e']);
      });

      it('never gives more places than the limit, and admits each entry once, lowest first, to jobs at once', async () => {
        const { slots } = await setup();
        const slot = slotOf(3);
        const ids = Array.from({ length: 14 }, (_, i) => `j${String(i).padStart(2, '0')}`);
        // ranks run against the ids: the last to ask ranks first
        const results = await Promise.all(ids.map((id, i) => join(slots, slot, id, 100 - i)));
        expect(results.filter((x) => x.kind === 'held')).toHaveLength(3);
        const state = await stateOf(slots, slot);
        expect(state).toMatchObject({ waiting: 11 });
        expect(state.holders).toHaveLength(3);
        const waiting = ids.filter((id) => !state.holders.includes(id));
        await Promise.all(state.holders.map((jobId) => slots.release({ slot, jobId })));
        const admitted = (await Promise.all([1, 2, 3].map(() => slots.admit({ slot, now: NOW })))).flat();
        // the three of lowest rank, each once
        const expected = [...waiting].reverse().slice(0, 3);
        expect(admitted.map((a) => a.jobId).sort()).toEqual([...expected].sort());
        const after = await stateOf(slots, slot);
        expect(after.holders.sort()).toEqual([...expected].sort());
        expect(after.waiting).toBe(8);
      });
    });

    describe('fair share (a limit with fairBy)', () => {
      const r = (rank: number, jobId: string) => `${String(rank).padStart(15, '0')}#${jobId}`;
      /** The type's one fair slot, as a job of fair key `fairKey` sees it; weight 3 for keys starting with `w`. */
      const fairSlot = (base: Slot, fairKey: string): Slot => ({
        ...base,
        fair: { key: fairKey, weightOf: (k) => (k.startsWith('w') ? 3 : 1) },
      });
      /** `jobId` of key `fairKey` (its first letter) asks for a place under rank `rank`. */
      const join = (slots: FlowSlots, base: Slot, jobId: string, rank: number, now = NOW) =>
        slots.acquire({
          slot: fairSlot(base, jobId.replace(/[0-9]+$/, '')),
          jobId,
          type: 'echo',
          now,
          token: 1,
          rank: r(rank, jobId),
        });
      /** Frees `jobId`'s place and admits once, at `now`: the jobs handed a place. */
      const freeOne = async (slots: FlowSlots, base: Slot, jobId: string, now: number) => {
        await slots.release({ slot: base, jobId });
        return (await slots.admit({ slot: fairSlot(base, 'any'), now })).map((a) => a.jobId);
      };

      it('hands a freed place to the waiting key that runs fewest, not to the oldest job', async () => {
        const { slots } = await setup();
        const base = { ...slotOf(3), key: '*' };
        for (const [i, id] of ['a1', 'a2', 'a3', 'a4', 'a5', 'a6'].entries()) await join(slots, base, id, i);
        // b and c join after a's backlog: oldest-first would serve a4..a6 first
        expect(await join(slots, base, 'b1', 10)).toMatchObject({ kind: 'waiting', first: true });
        await join(slots, base, 'b2', 11);
        expect(await join(slots, base, 'c1', 12)).toMatchObject({ kind: 'waiting', first: false });
        const state = await slots.state(base);
        expect(state.holders.map((h) => [h.jobId, h.fair])).toEqual([
          ['a1', 'a'],
          ['a2', 'a'],
          ['a3', 'a'],
        ]);
        expect(state).toMatchObject({ waiting: 6, waitingByFairKey: { a: 3, b: 2, c: 1 } });
        // a runs 2, b and c 0: b (ahead of c by key, as both joined at once)
        expect(await freeOne(slots, base, 'a1', NOW + 1)).toEqual(['b1']);
        // a 1, b 1, c 0
        expect(await freeOne(slots, base, 'a2', NOW + 2)).toEqual(['c1']);
        // a 0, b 1, c 1
        expect(await freeOne(slots, base, 'a3', NOW + 3)).toEqual(['a4']);
        // a 1, b 0 (c has no one left)
        expect(await freeOne(slots, base, 'b1', NOW + 4)).toEqual(['b2']);
        expect(await slots.state(base)).toMatchObject({ waiting: 2, waitingByFairKey: { a: 2 } });
        expect(await freeOne(slots, base, 'c1', NOW + 5)).toEqual(['a5']);
        const held = (await slots.state(base)).holders.find((h) => h.jobId === 'a5');
        expect(held).toEqual({ jobId: 'a5', since: NOW + 5, token: 0, fair: 'a' });
      });

      it('keys of equal share take turns: the key handed a place goes behind the others', async () => {
        const { slots } = await setup();
        const base = { ...slotOf(1), key: '*' };
        await join(slots, base, 'h1', 0);
        for (let i = 0; i < 3; i++) {
          await join(slots, base, `a${i}`, 10 + i);
          await join(slots, base, `b${i}`, 20 + i);
        }
        const served: string[] = [];
        let holder = 'h1';
        for (let i = 1; i <= 6; i++) {
          const [next] = await freeOne(slots, base, holder, NOW + i);
          holder = next as string;
          served.push(holder);
        }
        expect(served).toEqual(['a0', 'b0', 'a1', 'b1', 'a2', 'b2']);
        expect(await slots.state(base)).toMatchObject({ waiting: 0 });
        expect((await slots.state(base)).waitingByFairKey).toBeUndefined();
      });

      it('shares by weight: a key of weight 3 holds three places to one', async () => {
        const { slots } = await setup();
        const base = { ...slotOf(4), key: '*' };
        for (let i = 0; i < 4; i++) await join(slots, base, `x${i}`, i);
        for (let i = 0; i < 6; i++) {
          await join(slots, base, `w${i}`, 10 + i);
          await join(slots, base, `z${i}`, 10 + i);
        }
        for (const [i, id] of ['x0', 'x1', 'x2', 'x3'].entries()) await freeOne(slots, base, id, NOW + i + 1);
        const byKey = (await slots.state(base)).holders.map((h) => h.fair).sort();
        expect(byKey).toEqual(['w', 'w', 'w', 'z']);
      });

      it('takes a weight set at run time in place of the spec’s, from the next admission; removed, the spec’s holds', async () => {
        const { slots } = await setup();
        const base = { ...slotOf(4), key: '*' };
        for (let i = 0; i < 4; i++) await join(slots, base, `x${i}`, i);
        for (let i = 0; i < 6; i++) {
          await join(slots, base, `a${i}`, 10 + i);
          await join(slots, base, `b${i}`, 10 + i);
        }
        const by = 'arn:aws:iam::123456789012:role/ops';
        await slots.setWeight({ slot: base, fairKey: 'b', weight: 3, by, now: NOW });
        await slots.setWeight({ slot: base, fairKey: 'b', weight: 3, by, now: NOW }); // again: the same
        expect((await slots.state(base)).fairWeights).toEqual({ b: 3 });
        for (const [i, id] of ['x0', 'x1', 'x2', 'x3'].entries()) await freeOne(slots, base, id, NOW + i + 1);
        expect((await slots.state(base)).holders.map((h) => h.fair).sort()).toEqual(['a', 'b', 'b', 'b']);
        await slots.setWeight({ slot: base, fairKey: 'b', weight: undefined, by, now: NOW });
        expect((await slots.state(base)).fairWeights).toBeUndefined();
        // equal weights again: with b's 3 a place freed by b would go back to b (2/3 against a's 1/1); now to a
        const b = (await slots.state(base)).holders.find((h) => h.fair === 'b')?.jobId as string;
        expect(await freeOne(slots, base, b, NOW + 10)).toEqual(['a1']);
        // removing a weight from a type with no slot item creates none
        const none = { ...slotOf(2), key: '*' };
        await slots.setWeight({ slot: none, fairKey: 'q', weight: undefined, by, now: NOW });
        expect(await slots.state(none)).toEqual({ holders: [], waiting: 0, issued: 0, admitted: 0 });
      });

      it('lists a fair key’s line in its order, and only that key’s', async () => {
        const { slots } = await setup();
        const base = { ...slotOf(1), key: '*' };
        await join(slots, base, 'h1', 0);
        await join(slots, base, 'a2', 30);
        await join(slots, base, 'b1', 5);
        await join(slots, base, 'a1', 20);
        const listed = await slots.line({ slot: fairSlot(base, 'a'), max: 50 });
        expect(listed).toEqual([
          { jobId: 'a1', type: 'echo', rank: r(20, 'a1'), fair: 'a' },
          { jobId: 'a2', type: 'echo', rank: r(30, 'a2'), fair: 'a' },
        ]);
        expect((await slots.line({ slot: fairSlot(base, 'a'), max: 1 })).map((e) => e.jobId)).toEqual(['a1']);
        expect((await slots.line({ slot: fairSlot(base, 'zz'), max: 50 })).map((e) => e.jobId)).toEqual([]);
      });

      it('is idempotent and counts each key exactly under concurrent joins and admits', async () => {
        const { slots } = await setup();
        const base = { ...slotOf(2), key: '*' };
        const ids = ['a0', 'a1', 'a2', 'a3', 'b0', 'b1', 'c0', 'a4', 'b2', 'c1'];
        await Promise.all(ids.map((id, i) => join(slots, base, id, i)));
        // sent again (a lost answer): one entry and one count each
        await Promise.all(ids.map((id, i) => join(slots, base, id, i)));
        const state = await slots.state(base);
        expect(state.holders).toHaveLength(2);
        const counts = Object.values(state.waitingByFairKey ?? {}).reduce((a, b) => a + b, 0);
        expect(counts).toBe(8);
        expect(state.waiting).toBe(8);
        await Promise.all(state.holders.map((h) => slots.release({ slot: base, jobId: h.jobId })));
        const admitted = (await Promise.all([1, 2, 3].map(() => slots.admit({ slot: fairSlot(base, 'a'), now: NOW }))))
          .flat()
          .map((a) => a.jobId);
        expect(admitted).toHaveLength(2);
        expect(new Set(admitted).size).toBe(2);
        const after = await slots.state(base);
        expect(after.waiting).toBe(6);
        expect(Object.values(after.waitingByFairKey ?? {}).reduce((a, b) => a + b, 0)).toBe(6);
      });
    });

    describe('a place taken at enqueue (acquire with token 0, before the job has an attempt)', () => {
      const r = (rank: number, jobId: string) => `${String(rank).padStart(15, '0')}#${jobId}`;
      const fairSlot = (base: Slot, fairKey: string): Slot => ({ ...base, fair: { key: fairKey, weightOf: () => 1 } });
      const atEnqueue = (slots: FlowSlots, slot: Slot, jobId: string, rank: number) =>
        slots.acquire({ slot, jobId, type: 'echo', now: NOW, token: 0, rank: r(rank, jobId) });
      /** The job's first attempt, on its delivery. */
      const attempt = (slots: FlowSlots, slot: Slot, jobId: string, rank: number) =>
        slots.acquire({ slot, jobId, type: 'echo', now: NOW + 2, token: 1, rank: r(rank, jobId) });

      it('holds a free place as one handed on (token 0), which the attempt takes over; joins while every place is held', async () => {
        const { slots } = await setup();
        const slot = slotOf(2);
        expect(await atEnqueue(slots, slot, 'a', 1)).toEqual({ kind: 'held', fresh: true });
        // sent again (a lost answer): the same place
        expect(await atEnqueue(slots, slot, 'a', 1)).toEqual({ kind: 'held', fresh: false });
        expect(await atEnqueue(slots, slot, 'b', 2)).toEqual({ kind: 'held', fresh: true });
        expect((await slots.state(slot)).holders).toEqual([
          { jobId: 'a', since: NOW, token: 0 },
          { jobId: 'b', since: NOW, token: 0 },
        ]);
        expect(await attempt(slots, slot, 'a', 1)).toEqual({ kind: 'held', fresh: false });
        // the attempt's place is not taken back by a late take at enqueue
        expect(await atEnqueue(slots, slot, 'a', 1)).toEqual({ kind: 'held', fresh: false });
        expect((await slots.state(slot)).holders[0]).toEqual({ jobId: 'a', since: NOW + 2, token: 1 });
        expect(await atEnqueue(slots, slot, 'n1', 5)).toMatchObject({ kind: 'waiting', rank: r(5, 'n1'), first: true });
        expect(await stateOf(slots, slot)).toEqual({ holders: ['a', 'b'], waiting: 1, issued: 0, admitted: 0 });
        // a place given back before b's attempt took it goes to the line
        expect(await slots.release({ slot, jobId: 'b', token: 0 })).toBe(true);
        expect(await slots.admit({ slot, now: NOW + 3 })).toEqual([{ jobId: 'n1', type: 'echo', rank: r(5, 'n1') }]);
      });

      it('holds its fair key in a slot shared fairly, and joins its key’s line, served by the fair rule', async () => {
        const { slots } = await setup();
        const base = { ...slotOf(2), key: '*' };
        expect(await atEnqueue(slots, fairSlot(base, 'a'), 'a1', 1)).toMatchObject({ kind: 'held' });
        expect(await atEnqueue(slots, fairSlot(base, 'a'), 'a2', 2)).toMatchObject({ kind: 'held' });
        for (let i = 3; i <= 5; i++) {
          expect(await atEnqueue(slots, fairSlot(base, 'a'), `a${i}`, i)).toMatchObject({ kind: 'waiting' });
        }
        expect(await atEnqueue(slots, fairSlot(base, 'b'), 'b1', 10)).toMatchObject({ kind: 'waiting' });
        const state = await slots.state(base);
        expect(state).toMatchObject({ waiting: 4, waitingByFairKey: { a: 3, b: 1 } });
        expect(state.holders.map((h) => [h.jobId, h.fair, h.token])).toEqual([
          ['a1', 'a', 0],
          ['a2', 'a', 0],
        ]);
        await slots.release({ slot: base, jobId: 'a1' });
        // a runs 1, b 0: b's first, though a's waited longer
        expect((await slots.admit({ slot: fairSlot(base, 'any'), now: NOW + 1 })).map((a) => a.jobId)).toEqual(['b1']);
      });
    });

    describe('limits set at run time', () => {
      const setBy = (slots: FlowSlots, slot: Slot, limit: number | undefined) =>
        slots.setLimit({ slot, limit, by: 'arn:aws:iam::123456789012:role/ops', now: NOW + 1 });
      const joinRanked = (slots: FlowSlots, slot: Slot, jobId: string, rank: number) =>
        slots.acquire({
          slot,
          jobId,
          type: 'echo',
          now: NOW,
          token: 1,
          rank: `${String(rank).padStart(15, '0')}#${jobId}`,
        });

      it('creates the slot on a key that has none, and records who set the limit and when', async () => {
        const { slots } = await setup();
        const slot = slotOf(1);
        await setBy(slots, slot, 2);
        expect(await stateOf(slots, slot)).toEqual({
          holders: [],
          waiting: 0,
          issued: 0,
          admitted: 0,
          runtimeLimit: { limit: 2, by: 'arn:aws:iam::123456789012:role/ops', at: NOW + 1 },
        });
        // above the spec's 1: two take a place, the third waits
        expect(await take(slots, slot, 'a')).toEqual({ kind: 'held', fresh: true });
        expect(await take(slots, slot, 'b')).toEqual({ kind: 'held', fresh: true });
        expect(await take(slots, slot, 'c')).toMatchObject({ kind: 'waiting', ticket: 0, first: true });
      });

      it('a lowered limit lets the holders finish and holds from the next take', async () => {
        const { slots } = await setup();
        const slot = slotOf(3);
        await take(slots, slot, 'a');
        await take(slots, slot, 'b');
        await setBy(slots, slot, 1);
        expect((await stateOf(slots, slot)).holders).toEqual(['a', 'b']);
        expect(await take(slots, slot, 'c')).toMatchObject({ kind: 'waiting', ticket: 0 });
        await slots.release({ slot, jobId: 'a' });
        // b still holds the one place
        expect(await slots.admit({ slot, now: NOW })).toEqual([]);
        await slots.release({ slot, jobId: 'b' });
        expect(await slots.admit({ slot, now: NOW })).toEqual([{ jobId: 'c', type: 'echo', ticket: 0 }]);
        expect(await stateOf(slots, slot)).toMatchObject({ holders: ['c'], waiting: 0 });
      });

      it('a raised limit lets more in: admit hands the new places to the waiting jobs at once', async () => {
        const { slots } = await setup();
        const slot = slotOf(1);
        await take(slots, slot, 'a');
        await take(slots, slot, 'b');
        await take(slots, slot, 'c');
        await take(slots, slot, 'd');
        await setBy(slots, slot, 3);
        expect((await slots.admit({ slot, now: NOW })).map((x) => x.jobId)).toEqual(['b', 'c']);
        expect(await stateOf(slots, slot)).toMatchObject({
          holders: ['a', 'b', 'c'],
          waiting: 1,
          issued: 3,
          admitted: 2,
        });
      });

      it('removed, the spec limit holds again; removing one from a key with no slot creates none', async () => {
        const { slots } = await setup();
        const slot = slotOf(1);
        await setBy(slots, slot, 2);
        await take(slots, slot, 'a');
        await take(slots, slot, 'b');
        await setBy(slots, slot, undefined);
        await slots.release({ slot, jobId: 'a' });
        expect(await take(slots, slot, 'c')).toMatchObject({ kind: 'waiting', ticket: 0 });
        expect(await stateOf(slots, slot)).toEqual({ holders: ['b'], waiting: 1, issued: 1, admitted: 0 });
        const untouched = slotOf(1);
        await setBy(slots, untouched, undefined);
        expect(await stateOf(slots, untouched)).toEqual({ holders: [], waiting: 0, issued: 0, admitted: 0 });
      });

      it('the ranked line honours it: a lowered limit makes a newcomer join, a raised one admits the head', async () => {
        const { slots } = await setup();
        const slot = slotOf(3);
        await setBy(slots, slot, 1);
        expect(await joinRanked(slots, slot, 'a', 50)).toEqual({ kind: 'held', fresh: true });
        expect(await joinRanked(slots, slot, 'b', 20)).toMatchObject({ kind: 'waiting', first: true });
        expect(await joinRanked(slots, slot, 'c', 10)).toMatchObject({ kind: 'waiting', first: true });
        expect(await slots.admit({ slot, now: NOW })).toEqual([]);
        await setBy(slots, slot, 2);
        expect((await slots.admit({ slot, now: NOW })).map((x) => x.jobId)).toEqual(['c']);
        expect(await stateOf(slots, slot)).toMatchObject({ holders: ['a', 'c'], waiting: 1 });
      });
    });
  });
}
