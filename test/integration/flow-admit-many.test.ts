/**
 * `DynamoFlowSlots.admit` on DynamoDB Local hands several free places of a ranked line on in one
 * transaction (shared/aws/flow-slots/admit-many.ts). What makes it worth having: one read of
 * the slot item, one Query per key served and one transaction, where one by one each place cost
 * all three. What must not change: who is admitted and in what order, which is checked against
 * the in-memory fake (test/local-aws/memory-flow.ts), which admits one at a time, on random
 * lines; and a round whose answer is lost still names its jobs once.
 *
 * Size: ORRERY_ADMIT_RUNS random lines (default 25); on failure fast-check prints the seed.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DynamoFlowSlots } from '../../shared/aws/dynamo-flow-slots';
import { ADMIT_CHUNK } from '../../shared/aws/flow-slots/admit-many';
import type { FlowSlots, Slot } from '../../shared/core/flow';
import { useJobTable } from '../local-aws/job-table';
import { FakeFlowSlots } from '../local-aws/memory-flow';
import { FaultInjector } from '../support/faults';

const { dynamo, tableName } = useJobTable('admit-many');
const faults = new FaultInjector();
faults.install(dynamo, 'dynamodb');
const NOW = Date.parse('2026-06-01T00:00:00.000Z');
const run = Math.random().toString(36).slice(2, 8);
let seq = 0;

/** A rank key: `time` as the 15 digits of the real ones, then the job id. */
const r = (time: number, jobId: string) => `${String(time).padStart(15, '0')}#${jobId}`;
const calls = (command: string) => faults.calls.get(command) ?? 0;

interface Case {
  limit: number;
  /** Fair key of each job (in the order they come), or none: a ranked line without `fairBy`. */
  keys: (string | undefined)[];
  weights: Record<string, number>;
  /** Holders given back before the admission (indexes into the holders, in the order they took). */
  freed: number[];
  /** A limit set at run time, above the spec's. */
  runtimeLimit?: number;
}

/** Jobs come in order; the first `limit` take the places, the others wait; then `freed` give theirs back. */
async function lineOf(slots: FlowSlots, c: Case): Promise<{ base: Slot; admitter: Slot }> {
  seq += 1;
  const base: Slot = { scope: `adm-${run}-${seq}#0`, key: '*', limit: c.limit };
  const weightOf = (k: string) => c.weights[k] ?? 1;
  const fairSlot = (key: string | undefined): Slot => (key === undefined ? base : { ...base, fair: { key, weightOf } });
  const holders: string[] = [];
  for (const [i, key] of c.keys.entries()) {
    const jobId = `j${i}`;
    const out = await slots.acquire({
      slot: fairSlot(key),
      jobId,
      type: 'echo',
      now: NOW + i,
      token: 0,
      rank: r(NOW + i, jobId),
    });
    if (out.kind === 'held') holders.push(jobId);
  }
  for (const i of c.freed) await slots.release({ slot: base, jobId: holders[i] as string });
  if (c.runtimeLimit !== undefined) {
    await slots.setLimit({ slot: base, limit: c.runtimeLimit, by: 'test', now: NOW });
  }
  return { base, admitter: c.keys.some((k) => k !== undefined) ? fairSlot('any') : base };
}

const stateOf = async (slots: FlowSlots, base: Slot) => {
  const s = await slots.state(base);
  return { holders: s.holders.map((h) => h.jobId).sort(), waiting: s.waiting, byKey: s.waitingByFairKey ?? {} };
};

const caseArb: fc.Arbitrary<Case> = fc
  .record({
    limit: fc.integer({ min: 2, max: 8 }),
    fair: fc.boolean(),
    keyCount: fc.integer({ min: 1, max: 4 }),
    extra: fc.integer({ min: 1, max: 14 }),
    keySeed: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 30, maxLength: 30 }),
    weights: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 4, maxLength: 4 }),
    freedShare: fc.float({ min: Math.fround(0.3), max: 1, noNaN: true }),
    raise: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
  })
  .map((x) => {
    const n = x.limit + x.extra;
    const keys = Array.from({ length: n }, (_, i) =>
      x.fair ? `t${(x.keySeed[i % x.keySeed.length] as number) % x.keyCount}` : undefined,
    );
    const freedCount = Math.max(2, Math.min(x.limit, Math.round(x.limit * x.freedShare)));
    const weights = Object.fromEntries(x.weights.map((w, i) => [`t${i}`, w]));
    return {
      limit: x.limit,
      keys,
      weights,
      freed: Array.from({ length: freedCount }, (_, i) => i),
      ...(x.raise === undefined ? {} : { runtimeLimit: x.limit + x.raise }),
    };
  });

describe('places freed together are handed on together', () => {
  it('admits the jobs, in the order, that the fake admitting one at a time does, in one transaction', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        const fake = new FakeFlowSlots();
        const slots = new DynamoFlowSlots(dynamo, tableName);
        const one = await lineOf(fake, c);
        const together = await lineOf(slots, c);
        const expected = (await fake.admit({ slot: one.admitter, now: NOW + 1000 })).map((a) => a.jobId);
        const [reads, queries, transactions] = [calls('GetItem'), calls('Query'), calls('TransactWriteItems')];
        const told: string[] = [];
        const admitted = await slots.admit({
          slot: together.admitter,
          now: NOW + 1000,
          onAdmitted: async (a) => {
            told.push(a.jobId);
          },
        });
        const made = {
          reads: calls('GetItem') - reads,
          queries: calls('Query') - queries,
          transactions: calls('TransactWriteItems') - transactions,
        };
        expect(admitted.map((a) => a.jobId)).toEqual(expected);
        expect(told).toEqual(expected);
        expect(await stateOf(slots, together.base)).toEqual(await stateOf(fake, one.base));
        if (expected.length >= 2 && expected.length <= ADMIT_CHUNK) {
          // one by one: a read, a Query and a transaction per place, and a last read; together,
          // one read when every free place is handed on, and a last one when the line ran out
          // first (a job that joined meanwhile is seen only by a read after its join)
          const free = (c.runtimeLimit ?? c.limit) - (c.limit - c.freed.length);
          expect(made.transactions).toBe(1);
          expect(made.reads).toBe(expected.length >= free ? 1 : 2);
          expect(made.queries).toBeLessThanOrEqual(new Set(c.keys).size);
        }
      }),
      { numRuns: Number(process.env.ORRERY_ADMIT_RUNS ?? 25) },
    );
  });

  it('a round whose answer is lost is found by its mark: its jobs are named once, and the line is served on', async () => {
    const slots = new DynamoFlowSlots(dynamo, tableName);
    const c: Case = { limit: 4, keys: ['a', 'a', 'b', 'b', 'a', 'b', 'a', 'b', 'c'], weights: {}, freed: [0, 1, 2, 3] };
    const { base, admitter } = await lineOf(slots, c);
    const fake = new FakeFlowSlots();
    const expected = (await fake.admit({ slot: (await lineOf(fake, c)).admitter, now: NOW + 1000 })).map(
      (a) => a.jobId,
    );
    // the round's transaction (more items than a single admission's 2) is applied, its answer lost on every try
    faults.script({
      match: (call) =>
        call.command === 'TransactWriteItems' && ((call.input.TransactItems as unknown[]) ?? []).length > 2,
      kind: 'server',
      phase: 'after',
      times: 3,
    });
    const admitted = await slots.admit({ slot: admitter, now: NOW + 1000 });
    expect(faults.events.filter((e) => e.kind === 'server' && e.phase === 'after').length).toBeGreaterThan(0);
    expect(admitted.map((a) => a.jobId)).toEqual(expected);
    expect((await slots.state(base)).holders.map((h) => h.jobId).sort()).toEqual([...expected].sort());
    // nothing handed twice: the next admission finds no free place
    expect(await slots.admit({ slot: admitter, now: NOW + 2000 })).toEqual([]);
  });
});
