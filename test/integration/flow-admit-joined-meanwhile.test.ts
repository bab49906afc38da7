/**
 * An admission of a ranked line that hands on every job in line as it read it, with places left,
 * while a job joins between its read and its transaction: DynamoFlowSlots on DynamoDB Local
 * through the real SDK, with the line keeper's look for the job that joined.
 *
 * The job that joins saw the slot full (its take was refused before the places were freed), so
 * its look hands nothing on: nothing in its answer says a place is free. The place it could
 * have is only seen by a read after its join. The admission that ran meanwhile must be that
 * read, or the job waits in line beside a free place until another holder ends.
 *
 * One admission reads after both places were freed: the line keeper's, which the give-backs of
 * one process share (shared/dispatch/line-keeper.ts), or the later of two that read alike.
 */
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoFlowSlots } from '../../shared/aws/dynamo-flow-slots';
import { DynamoJobStore } from '../../shared/aws/dynamo-job-store';
import type { AcquireResult, Slot } from '../../shared/core/flow';
import { createLineKeeper } from '../../shared/dispatch/line-keeper';
import { createLogger } from '../../shared/logger';
import { useJobTable } from '../local-aws/job-table';
import { holdingTransaction, localDynamoClient } from '../support/held-requests';

const { dynamo, tableName } = useJobTable('admit-joined');
const NOW = Date.parse('2026-06-01T00:00:00.000Z');
const r = (rank: number, jobId: string) => `${String(rank).padStart(15, '0')}#${jobId}`;
let n = 0;

describe('a job that joins while an admission hands on the whole line', () => {
  it.each([
    // one job in line, two places freed: the admission hands one place (one transaction of two items)
    { waiting: 1, freed: 2 },
    // two jobs in line, three places freed: one round of the two (admit-many.ts)
    { waiting: 2, freed: 3 },
  ])('is handed the place left ($waiting in line, $freed places freed)', async ({ waiting, freed }) => {
    n += 1;
    const slots = new DynamoFlowSlots(dynamo, tableName);
    const store = new DynamoJobStore(dynamo, tableName);
    const limit = freed + 1;
    const slot: Slot = { scope: `joined-${n}-${Date.now()}#0`, key: '*', limit };
    const holders = Array.from({ length: limit }, (_, i) => `h${i}`);
    for (const [i, jobId] of holders.entries()) {
      expect(await slots.acquire({ slot, jobId, type: 'echo', now: NOW, token: 1, rank: r(i, jobId) })).toMatchObject({
        kind: 'held',
      });
    }
    const inLine = Array.from({ length: waiting }, (_, i) => `x${i}`);
    for (const [i, jobId] of inLine.entries()) {
      expect(
        await slots.acquire({ slot, jobId, type: 'echo', now: NOW, token: 1, rank: r(100 + i, jobId) }),
      ).toMatchObject({ kind: 'waiting' });
    }
    // z comes while the slot is full: its take is refused, and its join is held
    const held = holdingTransaction((items) => items[0]?.Put?.Item?.jobId?.S === 'z');
    const z: Promise<AcquireResult> = new DynamoFlowSlots(held.client, tableName).acquire({
      slot,
      jobId: 'z',
      type: 'echo',
      now: NOW,
      token: 1,
      rank: r(200, 'z'),
    });
    await held.reached;
    // places are given back; one admission reads after them all
    for (const jobId of holders.slice(0, freed)) await slots.release({ slot, jobId, token: 1 });
    // z joins between the admission's read and its transaction (its whole answer settled meanwhile)
    const admitter = localDynamoClient();
    let first = true;
    admitter.middlewareStack.add(
      (next, context) => async (args) => {
        const items = (args.input as { TransactItems?: TransactWriteItem[] }).TransactItems;
        if (first && context.commandName === 'TransactWriteItemsCommand' && items) {
          first = false;
          held.open();
          await z;
        }
        return next(args);
      },
      { step: 'initialize', name: 'joinMeanwhile' },
    );
    const admitted = await new DynamoFlowSlots(admitter, tableName).admit({ slot, now: NOW + 1000 });
    const got = await z;
    admitter.destroy();
    held.client.destroy();
    expect(admitted.map((a) => a.jobId).slice(0, waiting)).toEqual(inLine);
    expect(got).toMatchObject({ kind: 'waiting', rank: r(200, 'z') });
    if (got.kind !== 'waiting') return;
    // z does what a job that joined does: it looks (its holders are the full slot it saw)
    const keeper = createLineKeeper({
      slots,
      store,
      handOff: { queue: {} as never, routes: {} },
      clock: { now: () => NOW + 5000 },
    });
    await keeper.look(slot, got, 'z', createLogger({ level: 'silent' }));
    // a place is free (limit - holders left - the line handed on): z holds it, nobody waits beside it
    const state = await slots.state(slot);
    expect(state.holders.map((h) => h.jobId).sort()).toEqual([...holders.slice(freed), ...inLine, 'z'].sort());
    expect(state.waiting).toBe(0);
  });
});
