/**
 * An admission of a slot shared fairly on a stale read of the slot item: two workers that free
 * places at once read the same item. The admission is conditioned on the chosen key's count and
 * since as read, so the second, whose read the first made stale, is refused and reads again;
 * otherwise both would hand their places to one key while another of equal share, waiting
 * longer, got none.
 */
import { describe, expect, it } from 'vitest';
import { DynamoFlowSlots, flowKeys } from '../../shared/aws/dynamo-flow-slots';
import { admitHead } from '../../shared/aws/flow-slots/ranked-line';
import { SlotTable, slotItem } from '../../shared/aws/flow-slots/slot-table';
import type { Slot } from '../../shared/core/flow';
import { useJobTable } from '../local-aws/job-table';

const { dynamo, tableName } = useJobTable('fair-stale');
const NOW = Date.parse('2026-06-01T00:00:00.000Z');
const r = (time: number, jobId: string) => `${String(time).padStart(15, '0')}#${jobId}`;

describe('fair share: admissions on a stale read (DynamoDB adapter)', () => {
  it('a second admitter working from the item read before the first admission is refused, not handed the same key', async () => {
    const slots = new DynamoFlowSlots(dynamo, tableName);
    const table = new SlotTable(dynamo, tableName);
    const base: Slot = { scope: 'fair-stale#0', key: '*', limit: 2 };
    const fairSlot = (key: string): Slot => ({ ...base, fair: { key, weightOf: () => 1 } });
    const join = (key: string, jobId: string, time: number, now: number) =>
      slots.acquire({ slot: fairSlot(key), jobId, type: 'echo', now, token: 1, rank: r(time, jobId) });
    await join('h', 'h1', NOW, NOW);
    await join('h', 'h2', NOW, NOW);
    // x waits since NOW + 1, y since NOW + 2: equal share, x first, then y
    for (let i = 1; i <= 3; i++) await join('x', `x${i}`, NOW + i, NOW + 1);
    for (let i = 1; i <= 3; i++) await join('y', `y${i}`, NOW + i, NOW + 2);
    await slots.release({ slot: base, jobId: 'h1' });
    await slots.release({ slot: base, jobId: 'h2' });
    // two admitters read the slot item at once
    const read = slotItem(await table.read(flowKeys.slot(base.scope, base.key)));
    const first = await admitHead(table, { slot: fairSlot('any'), item: read, now: NOW + 10, me: 'admitter-1' });
    expect(first).toMatchObject({ jobId: 'x1' });
    // the second works from the same read: x runs 1 now, y 0, so y1 is owed the place, or the admission is refused
    const second = await admitHead(table, { slot: fairSlot('any'), item: read, now: NOW + 11, me: 'admitter-2' });
    const holders = (await slots.state(base)).holders.map((h) => h.fair);
    expect({ second: second === undefined ? 'refused' : second === 'empty' ? 'empty' : second.jobId }).not.toEqual({
      second: 'x2',
    });
    expect(holders).not.toEqual(['x', 'x']);
  });
});
