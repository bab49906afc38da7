/**
 * DynamoFlowSlots under lost responses, on DynamoDB Local through the real SDK: a write applied
 * whose answer is lost is retried by the SDK and refused by its condition. The fake cannot show
 * this (it is atomic), so these cases run on the adapter only.
 */
import { describe, expect, it } from 'vitest';
import { DynamoFlowSlots } from '../../shared/aws/dynamo-flow-slots';
import type { Slot } from '../../shared/core/flow';
import { useJobTable } from '../local-aws/job-table';
import { FaultInjector } from '../support/faults';

const { dynamo, tableName } = useJobTable('flow-faults');
const faults = new FaultInjector();
faults.install(dynamo, 'dynamodb');
const NOW = Date.parse('2026-06-01T00:00:00.000Z');

describe('flow slots under lost responses', () => {
  it('hands on a slot whose admit was applied but whose answer was lost: the admitted job is still named, so it is sent its message', async () => {
    const slots = new DynamoFlowSlots(dynamo, tableName);
    const slot: Slot = { scope: `t-${Date.now()}#0`, key: 'k', limit: 1 };
    await slots.acquire({ slot, jobId: 'a', type: 'echo', now: NOW, token: 1 });
    expect(await slots.acquire({ slot, jobId: 'b', type: 'echo', now: NOW, token: 1 })).toMatchObject({
      kind: 'waiting',
      ticket: 0,
    });
    await slots.release({ slot, jobId: 'a', token: 1 });
    // the admit's write reaches the table, then its answer is lost: the SDK's retry is refused
    faults.script({
      match: (c) => c.command === 'UpdateItem' && String(c.input.UpdateExpression).includes('adm = adm + :one'),
      kind: 'server',
      phase: 'after',
    });
    expect(await slots.admit({ slot, now: NOW + 1 })).toEqual([{ jobId: 'b', type: 'echo', ticket: 0 }]);
    expect(faults.events.at(-1)).toMatchObject({ kind: 'server', phase: 'after' });
    expect(await slots.state(slot)).toMatchObject({ holders: [{ jobId: 'b', token: 0 }], admitted: 1, issued: 1 });
  });
});
