/**
 * `acquireEach` (an adapter's `acquireMany`, or one `acquire` per input): new jobs of one slot
 * taking their places at enqueue get the answers, the line and the order of service that one
 * `acquire` each, in order, would give. Run on the in-memory fake (test/unit/contract-fakes.test.ts)
 * and on the DynamoDB adapter on DynamoDB Local (test/integration/contract-adapters.test.ts),
 * whose `acquireMany` joins those that wait in a few transactions.
 */
import { describe, expect, it } from 'vitest';
import { MAX_FAIR_KEYS_WAITING } from '../../shared/core/fair-share';
import { type AcquireInput, type AcquireResult, acquireEach, type FlowSlots, type Slot } from '../../shared/core/flow';

const NOW = Date.parse('2026-06-01T00:00:00.000Z');

/** A rank key: `time` as the 15 digits of the real ones, then the job id. */
const r = (time: number, jobId: string) => `${String(time).padStart(15, '0')}#${jobId}`;

export function acquireEachContract(setup: () => Promise<{ slots: FlowSlots }>): void {
  const run = Math.random().toString(36).slice(2, 8);
  let seq = 0;
  const baseOf = (limit: number): Slot => {
    seq += 1;
    return { scope: `am-${run}-${seq}#0`, key: '*', limit };
  };
  const fairSlot = (base: Slot, fairKey: string): Slot => ({ ...base, fair: { key: fairKey, weightOf: () => 1 } });
  /** New jobs `j0`…: job i of fair key `keyOf(i)` (no fair key: `undefined`), ranked by i. */
  const newJobs = (base: Slot, n: number, keyOf: (i: number) => string | undefined, prefix = 'j'): AcquireInput[] =>
    Array.from({ length: n }, (_, i) => {
      const key = keyOf(i);
      const jobId = `${prefix}${i}`;
      const slot = key === undefined ? base : fairSlot(base, key);
      return { slot, jobId, type: 'echo', now: NOW + i, token: 0, rank: r(NOW + i, jobId) };
    });
  const kinds = (answers: AcquireResult[]) => answers.map((a) => a.kind);
  /** The slot's state, holders as ids (sorted). */
  const stateOf = async (slots: FlowSlots, base: Slot) => {
    const state = await slots.state(base);
    return {
      holders: state.holders.map((h) => h.jobId).sort(),
      waiting: state.waiting,
      waitingByFairKey: state.waitingByFairKey ?? {},
    };
  };
  /** Frees one place at a time and admits one: the order the line serves its jobs in. */
  const serveAll = async (slots: FlowSlots, base: Slot, holders: string[]): Promise<string[]> => {
    const served: string[] = [];
    const running = [...holders];
    for (let i = 0; i < 200; i++) {
      const done = running.shift();
      if (done === undefined) break;
      await slots.release({ slot: base, jobId: done });
      const admitted = await slots.admit({ slot: fairSlot(base, 'any'), now: NOW + 10_000 + i });
      for (const a of admitted) {
        served.push(a.jobId);
        running.push(a.jobId);
      }
    }
    return served;
  };

  /** The same jobs, one `acquire` each on one slot and `acquireEach` on another: the same answers, line and service. */
  async function sameAsOneByOne(limit: number, n: number, keyOf: (i: number) => string | undefined) {
    const { slots } = await setup();
    const one = baseOf(limit);
    const many = baseOf(limit);
    const oneByOne: AcquireResult[] = [];
    for (const input of newJobs(one, n, keyOf)) oneByOne.push(await slots.acquire(input));
    const together = await acquireEach(slots, newJobs(many, n, keyOf));
    expect(kinds(together)).toEqual(kinds(oneByOne));
    const state = await stateOf(slots, many);
    expect(state).toEqual(await stateOf(slots, one));
    const served = await serveAll(slots, many, state.holders);
    expect(served).toEqual(await serveAll(slots, one, (await stateOf(slots, one)).holders));
    // every job that waited is served once
    expect(new Set(served).size).toBe(n - limit);
    expect(served).toHaveLength(n - limit);
    expect(await stateOf(slots, many)).toMatchObject({ waiting: 0 });
    return { together, state };
  }

  describe('flow slots: new jobs of one slot taking their places together (acquireEach)', () => {
    it('the first take the free places, the rest wait; the line and its order are those of one acquire each', async () => {
      const { together, state } = await sameAsOneByOne(2, 30, (i) => `k${i % 5}`);
      expect(kinds(together)).toEqual([...Array(2).fill('held'), ...Array(28).fill('waiting')]);
      expect(state.waiting).toBe(28);
      expect(state.waitingByFairKey).toEqual({ k0: 5, k1: 5, k2: 6, k3: 6, k4: 6 });
    });

    it('a ranked line without fair keys, over more than one transaction of joins', async () => {
      const { together } = await sameAsOneByOne(3, 60, () => undefined);
      expect(kinds(together).filter((k) => k === 'waiting')).toHaveLength(57);
    });

    it('keys past the cap of fair keys waiting join the shared line, as one by one', async () => {
      const n = MAX_FAIR_KEYS_WAITING + 12;
      const { state } = await sameAsOneByOne(1, n, (i) => `t${i}`);
      expect(Object.keys(state.waitingByFairKey)).toHaveLength(MAX_FAIR_KEYS_WAITING + 1);
    });

    it('a job already in line keeps its one place, and a job that holds a place answers held', async () => {
      const { slots } = await setup();
      const base = baseOf(1);
      const [h, w, x, y] = newJobs(base, 4, (i) => `k${i}`) as [AcquireInput, AcquireInput, AcquireInput, AcquireInput];
      expect(await slots.acquire({ ...h, token: 1 })).toMatchObject({ kind: 'held' });
      expect(await slots.acquire(w)).toMatchObject({ kind: 'waiting' });
      const answers = await acquireEach(slots, [w, x, h, y]);
      expect(kinds(answers)).toEqual(['waiting', 'waiting', 'held', 'waiting']);
      expect(await stateOf(slots, base)).toEqual({
        holders: [h.jobId],
        waiting: 3,
        waitingByFairKey: { k1: 1, k2: 1, k3: 1 },
      });
      expect(await serveAll(slots, base, [h.jobId])).toEqual([w.jobId, x.jobId, y.jobId]);
    });

    it('who is told it is next in line is who one acquire each would tell, with new fair keys joining together', async () => {
      const { slots } = await setup();
      const firsts = (answers: AcquireResult[]) => answers.map((a) => (a.kind === 'waiting' ? a.first : undefined));
      const runBoth = async (together: boolean) => {
        const base = baseOf(1);
        // `z` holds the one place; `z1` waits behind it, then `y1` and `a1` of two keys not yet in line
        const [h, z1, y1, a1] = newJobs(base, 4, (i) => ['z', 'z', 'y', 'a'][i]) as AcquireInput[];
        expect(await slots.acquire({ ...(h as AcquireInput), token: 1 })).toMatchObject({ kind: 'held' });
        const inputs = [z1, y1, a1] as AcquireInput[];
        const answers: AcquireResult[] = [];
        if (together) answers.push(...(await acquireEach(slots, inputs)));
        else for (const input of inputs) answers.push(await slots.acquire(input));
        return { answers, served: await serveAll(slots, base, [(h as AcquireInput).jobId]) };
      };
      const oneByOne = await runBoth(false);
      const together = await runBoth(true);
      // while z holds its place, y (running none, waiting before a) is next: y1 is told so; once
      // z's holder gives it back, z1 is served first, then y1 and a1
      expect(oneByOne.served).toEqual(['j1', 'j2', 'j3']);
      expect(together.served).toEqual(oneByOne.served);
      expect(firsts(oneByOne.answers)).toEqual([true, true, false]);
      expect(firsts(together.answers)).toEqual(firsts(oneByOne.answers));
    });
  });
}
