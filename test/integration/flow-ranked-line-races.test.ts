/**
 * Races of the ranked line that need one request held while others run: DynamoFlowSlots on
 * DynamoDB Local through the real SDK. One client holds a chosen request (an SDK middleware waits
 * on a gate before sending it); the others go on. No mock of DynamoDB.
 */
import { describe, expect, it } from 'vitest';
import { DynamoFlowSlots } from '../../shared/aws/dynamo-flow-slots';
import type { Slot } from '../../shared/core/flow';
import { useJobTable } from '../local-aws/job-table';
import { holdingTransaction, localDynamoClient } from '../support/held-requests';

const { dynamo, tableName } = useJobTable('flow-ranked-races');
const NOW = Date.parse('2026-06-01T00:00:00.000Z');
const r = (rank: number, jobId: string) => `${String(rank).padStart(15, '0')}#${jobId}`;

/** A client whose TransactWriteItems that puts an entry of `jobId` waits until `open()`; `reached` resolves once it waits. */
const holdingJoinOf = (jobId: string) => holdingTransaction((items) => items[0]?.Put?.Item?.jobId?.S === jobId);

describe('ranked line races on DynamoDB Local', () => {
  it('tells a job that joins an empty line it is first, though another job waited when it looked', async () => {
    const slots = new DynamoFlowSlots(dynamo, tableName);
    const slot: Slot = { scope: `race-${Date.now()}#0`, key: 'k', limit: 1 };
    await slots.acquire({ slot, jobId: 'a', type: 'echo', now: NOW, token: 1, rank: r(1, 'a') });
    expect(await slots.acquire({ slot, jobId: 'y', type: 'echo', now: NOW, token: 1, rank: r(10, 'y') })).toMatchObject(
      {
        kind: 'waiting',
        first: true,
      },
    );
    // x looks while y waits (its take is refused, y counted), and its join is held
    const held = holdingJoinOf('x');
    const x = new DynamoFlowSlots(held.client, tableName).acquire({
      slot,
      jobId: 'x',
      type: 'echo',
      now: NOW,
      token: 1,
      rank: r(20, 'x'),
    });
    await held.reached;
    // meanwhile a ends and hands its place to y: the line is empty, the place held again
    await slots.release({ slot, jobId: 'a', token: 1 });
    expect((await slots.admit({ slot, now: NOW })).map((a) => a.jobId)).toEqual(['y']);
    held.open();
    const got = await x;
    held.client.destroy();
    // x joined a line nobody else waited in: it is the only one, at its head
    expect(await slots.state(slot)).toMatchObject({ holders: [{ jobId: 'y' }], waiting: 1 });
    // Broken: `first` comes from the read before the join (y waited then), so x is told it is
    // not first. The fake, atomic, answers first: true for the same order of writes. A line
    // whose only job is never "first" runs no reclaim of finished or gone holders until one is
    // suspect (over 15 minutes), and its later deliveries are the supervisor's resends.
    expect(got).toMatchObject({ kind: 'waiting', rank: r(20, 'x'), first: true });
  });
});

/** A client whose matching request is applied, and whose caller then gets an error: an answer lost every time. */
function answerLostOn(commandName: string) {
  const client = localDynamoClient();
  let lost = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const out = await next(args);
      if (context.commandName === commandName && lost === 0) {
        lost += 1;
        throw Object.assign(new Error('socket hang up: response lost'), { name: 'TimeoutError', $metadata: {} });
      }
      return out;
    },
    { step: 'initialize', name: 'loseAnswer' },
  );
  return client;
}

describe('a hand-on whose answer is lost on DynamoDB Local', () => {
  it.each([
    ['ranked', 'TransactWriteItemsCommand', (jobId: string) => ({ rank: r(1, jobId) })],
    ['oldest-first', 'UpdateItemCommand', () => ({})],
  ])('still names the job it handed the place to (%s line)', async (_line, command, place) => {
    const slots = new DynamoFlowSlots(dynamo, tableName);
    const slot: Slot = { scope: `lost-${command}-${Date.now()}#0`, key: 'k', limit: 1 };
    await slots.acquire({ slot, jobId: 'a', type: 'echo', now: NOW, token: 1, ...place('a') });
    expect(await slots.acquire({ slot, jobId: 'b', type: 'echo', now: NOW, token: 1, ...place('b') })).toMatchObject({
      kind: 'waiting',
    });
    await slots.release({ slot, jobId: 'a', token: 1 });
    const lossy = answerLostOn(command);
    const told: string[] = [];
    const admitted = await new DynamoFlowSlots(lossy, tableName)
      .admit({ slot, now: NOW, onAdmitted: async (one) => void told.push(one.jobId) })
      .catch((error: unknown) => error);
    lossy.destroy();
    // b holds the place: the write was applied; it must be named, or it is never sent its message
    expect((await slots.state(slot)).holders.map((h) => h.jobId)).toEqual(['b']);
    expect(told).toEqual(['b']);
    expect(admitted).toEqual([expect.objectContaining({ jobId: 'b' })]);
  });
});
