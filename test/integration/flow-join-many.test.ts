/**
 * `DynamoFlowSlots.acquireMany` on DynamoDB Local: new jobs that have to wait join their line in
 * a few transactions (what makes it worth having), and a transaction whose answer is lost leaves
 * each job in line once. What they answer, the line and its order are the contract's
 * (test/contract/flow-slots-many.contract.ts).
 */
import { describe, expect, it } from 'vitest';
import { DynamoFlowSlots } from '../../shared/aws/dynamo-flow-slots';
import { JOIN_CHUNK } from '../../shared/aws/flow-slots/join-many';
import type { AcquireInput, Slot } from '../../shared/core/flow';
import type { JobStore } from '../../shared/core/ports';
import { createLineKeeper } from '../../shared/dispatch/line-keeper';
import { useJobTable } from '../local-aws/job-table';
import { FaultInjector } from '../support/faults';

const { dynamo, tableName } = useJobTable('join-many');
const faults = new FaultInjector();
faults.install(dynamo, 'dynamodb');
const NOW = Date.parse('2026-06-01T00:00:00.000Z');
let n = 0;

function jobsOf(count: number): { base: Slot; inputs: AcquireInput[] } {
  n += 1;
  const base: Slot = { scope: `jm-${n}-${Date.now()}#0`, key: '*', limit: 2 };
  const inputs = Array.from({ length: count }, (_, i) => {
    const jobId = `j${i}`;
    const slot: Slot = { ...base, fair: { key: `t${i % 3}`, weightOf: () => 1 } };
    return { slot, jobId, type: 'echo', now: NOW + i, token: 0, rank: `${String(NOW + i).padStart(15, '0')}#${jobId}` };
  });
  return { base, inputs };
}

const transactions = () => faults.calls.get('TransactWriteItems') ?? 0;

describe('new jobs of one slot that have to wait join together', () => {
  it('100 jobs, 2 places: 2 takes, 1 join alone, the other 97 in ⌈97 / JOIN_CHUNK⌉ transactions', async () => {
    const slots = new DynamoFlowSlots(dynamo, tableName);
    const { base, inputs } = jobsOf(100);
    const before = transactions();
    const answers = await slots.acquireMany(inputs);
    expect(answers.filter((a) => a.kind === 'held')).toHaveLength(2);
    expect(answers.filter((a) => a.kind === 'waiting')).toHaveLength(98);
    // one by one, 98 joins were 98 transactions
    expect(transactions() - before).toBe(1 + Math.ceil(97 / JOIN_CHUNK));
    expect(await slots.state(base)).toMatchObject({ waiting: 98, waitingByFairKey: { t0: 33, t1: 32, t2: 33 } });
    // exactly one of them is told it is next in line
    expect(answers.filter((a) => a.kind === 'waiting' && a.first)).toHaveLength(1);
  });

  it('a join whose answer is lost, sent again, leaves each job in line once', async () => {
    const slots = new DynamoFlowSlots(dynamo, tableName);
    const { base, inputs } = jobsOf(12);
    // the many-join's transaction (more than the 2 items of a single join) is applied, its answer lost
    faults.script({
      match: (c) => c.command === 'TransactWriteItems' && ((c.input.TransactItems as unknown[]) ?? []).length > 2,
      kind: 'server',
      phase: 'after',
    });
    const answers = await slots.acquireMany(inputs);
    expect(faults.events.at(-1)).toMatchObject({ kind: 'server', phase: 'after' });
    expect(answers.map((a) => a.kind)).toEqual([...Array(2).fill('held'), ...Array(10).fill('waiting')]);
    expect(await slots.state(base)).toMatchObject({ waiting: 10, waitingByFairKey: { t0: 3, t1: 3, t2: 4 } });
    // and each is admitted once
    const served: string[] = [];
    const running = ['j0', 'j1'];
    for (let i = 0; i < 20 && running.length > 0; i++) {
      await slots.release({ slot: base, jobId: running.shift() as string });
      const admitted = (await slots.admit({ slot: base, now: NOW + 100 + i })).map((a) => a.jobId);
      served.push(...admitted);
      running.push(...admitted);
    }
    expect(served).toHaveLength(10);
    expect(new Set(served).size).toBe(10);
  });
  it("a gathered turn whose last join fails keeps the others' answers: they hold their place or wait, once", async () => {
    const slots = new DynamoFlowSlots(dynamo, tableName);
    const keeper = createLineKeeper({
      slots,
      store: {} as JobStore,
      handOff: { queue: {} as never, routes: {} },
      clock: { now: () => NOW },
    });
    const { base, inputs } = jobsOf(30);
    // the join of the last two (j28, j29: their entries and the slot item) fails on every try of the SDK's
    faults.script({
      match: (c) =>
        c.command === 'TransactWriteItems' &&
        JSON.stringify(c.input.TransactItems).includes(base.scope) &&
        ((c.input.TransactItems as unknown[]) ?? []).length === 3,
      kind: 'server',
      phase: 'before',
      times: Number.POSITIVE_INFINITY,
    });
    // j0 takes its turn alone; j1…j29 gather meanwhile: j1 takes the last place, j2 joins alone,
    // j3…j27 join together, and the join of j28 and j29 fails
    const settled = await Promise.allSettled(inputs.map((input) => keeper.placeInTurn(input)));
    expect(faults.events.at(-1)).toMatchObject({ kind: 'server', phase: 'before' });
    const kinds = settled.map((s) => (s.status === 'fulfilled' ? s.value.kind : 'failed'));
    expect(kinds).toEqual([...Array(2).fill('held'), ...Array(26).fill('waiting'), 'failed', 'failed']);
    expect(await slots.state(base)).toMatchObject({ waiting: 26 });
  });
});
