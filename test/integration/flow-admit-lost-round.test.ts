/**
 * A round of admissions (shared/aws/flow-slots/admit-many.ts) applied with its answer lost, on
 * DynamoDB Local through the real SDK: the admitter tells its own write by its mark on the
 * places it set. The round is all or nothing, so the mark on any of its places says it was
 * applied; the first job's place may no longer carry it (its attempt took the place over, or
 * it already gave it back), and the other jobs handed places must still be named, or they are
 * never sent their messages.
 */
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoFlowSlots } from '../../shared/aws/dynamo-flow-slots';
import type { Slot } from '../../shared/core/flow';
import { useJobTable } from '../local-aws/job-table';
import { localDynamoClient } from '../support/held-requests';

const { dynamo, tableName } = useJobTable('admit-lost-round');
const NOW = Date.parse('2026-06-01T00:00:00.000Z');
const r = (rank: number, jobId: string) => `${String(rank).padStart(15, '0')}#${jobId}`;

describe('a round of admissions whose answer is lost', () => {
  it('names every job it handed a place, though the first one took its place over before the admitter looked', async () => {
    const slots = new DynamoFlowSlots(dynamo, tableName);
    const slot: Slot = { scope: `lost-round-${Date.now()}#0`, key: '*', limit: 3 };
    for (const [i, jobId] of ['h0', 'h1', 'h2'].entries()) {
      expect(await slots.acquire({ slot, jobId, type: 'echo', now: NOW, token: 1, rank: r(i, jobId) })).toMatchObject({
        kind: 'held',
      });
    }
    for (const [i, jobId] of ['x0', 'x1', 'x2', 'x3'].entries()) {
      expect(
        await slots.acquire({ slot, jobId, type: 'echo', now: NOW, token: 1, rank: r(10 + i, jobId) }),
      ).toMatchObject({ kind: 'waiting' });
    }
    for (const jobId of ['h0', 'h1', 'h2']) await slots.release({ slot, jobId, token: 1 });
    // the round is applied; before its answer comes back (lost), x0's attempt takes its place over
    // (a delivery of x0 that was under way), and the admitter is left with an error
    const lossy = localDynamoClient();
    let lost = 0;
    lossy.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        const items = (args.input as { TransactItems?: TransactWriteItem[] }).TransactItems ?? [];
        if (context.commandName === 'TransactWriteItemsCommand' && items.length > 2 && lost === 0) {
          lost += 1;
          expect(
            await slots.acquire({
              slot,
              jobId: 'x0',
              type: 'echo',
              now: NOW + 2000,
              token: 1,
              rank: r(10, 'x0'),
              waitsAs: r(10, 'x0'),
            }),
          ).toEqual({ kind: 'held', fresh: false });
          throw Object.assign(new Error('socket hang up: response lost'), { name: 'TimeoutError', $metadata: {} });
        }
        return out;
      },
      { step: 'initialize', name: 'loseRoundAnswer' },
    );
    const told: string[] = [];
    const admitted = await new DynamoFlowSlots(lossy, tableName)
      .admit({ slot, now: NOW + 1000, onAdmitted: async (one) => void told.push(one.jobId) })
      .catch((error: unknown) => error);
    lossy.destroy();
    expect(lost).toBe(1);
    // the round was applied: x0, x1 and x2 hold the places
    expect((await slots.state(slot)).holders.map((h) => h.jobId)).toEqual(['x0', 'x1', 'x2']);
    // each is named (and so sent its message): x1 and x2 have no other
    expect(admitted).toEqual(['x0', 'x1', 'x2'].map((jobId) => expect.objectContaining({ jobId })));
    expect(told).toEqual(['x0', 'x1', 'x2']);
  });
});
