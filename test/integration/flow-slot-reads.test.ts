/**
 * What the slot adapter reads on the two calls every job of a busy line makes, on DynamoDB Local
 * through the real SDK (calls counted by a middleware on the client):
 * - the delivery of a job that waited (`acquire` with its ticket or rank) takes over the place it
 *   was handed with one write, no read first; a job still in line is told so from the refused
 *   write's answer;
 * - an admission's transaction cancelled on its one try reads nothing to look for its mark (it
 *   was not applied); cancelled on the SDK's retry after a lost answer, it looks, and an
 *   admission that was applied stands.
 */
import {
  type DynamoDBClient,
  PutItemCommand,
  type TransactWriteItem,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { keyOf, N, S } from '../../shared/aws/attributes';
import { DynamoFlowSlots } from '../../shared/aws/dynamo-flow-slots';
import { transactOrMarked } from '../../shared/aws/flow-slots/ranked-line';
import { flowKeys, SlotTable } from '../../shared/aws/flow-slots/slot-table';
import type { AcquireInput, Slot } from '../../shared/core/flow';
import { useJobTable } from '../local-aws/job-table';
import { holdingTransaction, localDynamoClient } from '../support/held-requests';

const { dynamo, tableName } = useJobTable('slot-reads');
const NOW = Date.parse('2026-06-01T00:00:00.000Z');
const r = (rank: number, jobId: string) => `${String(rank).padStart(15, '0')}#${jobId}`;
let n = 0;
const newSlot = (limit: number): Slot => ({ scope: `reads-${++n}-${Date.now()}#0`, key: '*', limit });

/** A client of its own whose calls are listed by operation as they are sent (SDK retries once each). */
function countingClient(): { client: DynamoDBClient; calls: string[] } {
  const client = localDynamoClient();
  const calls: string[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      calls.push((context.commandName ?? '').replace(/Command$/, ''));
      return next(args);
    },
    { step: 'initialize', name: 'countCalls' },
  );
  return { client, calls };
}

/**
 * Below the SDK's retry: the first TransactWriteItems try runs `first` (given the try's own send)
 * and fails with a transient error, which the SDK retries; the count of such tries is returned.
 */
function failFirstTry(client: DynamoDBClient, first: (send: () => Promise<unknown>) => Promise<unknown>) {
  let failed = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== 'TransactWriteItemsCommand' || failed > 0) return next(args);
      failed += 1;
      await first(() => next(args));
      throw Object.assign(new Error('socket timed out: response lost'), { name: 'TimeoutError', $metadata: {} });
    },
    { step: 'deserialize', name: 'failFirstTry', priority: 'low' },
  );
  return () => failed;
}

describe('the delivery of a job that waited', () => {
  /** x's next delivery (its attempt, token 1), through a counting client: what it got, and the calls it made. */
  const deliveredAgain = async (slot: Slot, place: Pick<AcquireInput, 'rank' | 'waitsAs' | 'ticket'>) => {
    const { client, calls } = countingClient();
    const input: AcquireInput = { slot, jobId: 'x', type: 'echo', now: NOW + 2, token: 1, ...place };
    const got = await new DynamoFlowSlots(client, tableName).acquire(input);
    client.destroy();
    return { got, calls };
  };

  it.each([
    { line: 'ranked', ranked: true },
    { line: 'ticket', ranked: false },
  ])('takes over the place it was handed with one write and no read ($line line)', async ({ ranked }) => {
    const slots = new DynamoFlowSlots(dynamo, tableName);
    const slot = newSlot(1);
    const rank = (i: number, id: string) => (ranked ? { rank: r(i, id) } : {});
    expect(await slots.acquire({ slot, jobId: 'h', type: 'echo', now: NOW, token: 1, ...rank(0, 'h') })).toMatchObject({
      kind: 'held',
    });
    const joined = await slots.acquire({ slot, jobId: 'x', type: 'echo', now: NOW, token: 1, ...rank(1, 'x') });
    expect(joined).toMatchObject({ kind: 'waiting' });
    await slots.release({ slot, jobId: 'h', token: 1 });
    const admitted: string[] = [];
    await slots.admit({ slot, now: NOW + 1, onAdmitted: async (a) => void admitted.push(a.jobId) });
    expect(admitted).toEqual(['x']);

    const place =
      joined.kind === 'waiting' && joined.rank !== undefined ? { waitsAs: joined.rank, ...rank(1, 'x') } : {};
    const ticket = joined.kind === 'waiting' && joined.ticket !== undefined ? { ticket: joined.ticket } : {};
    const { got, calls } = await deliveredAgain(slot, { ...place, ...ticket });
    expect(got).toEqual({ kind: 'held', fresh: false });
    expect(calls).toEqual(['UpdateItem']);
    expect((await slots.state(slot)).holders).toEqual([expect.objectContaining({ jobId: 'x', token: 1 })]);
  });

  it('is told it still waits, from the refused take, with no read of the slot', async () => {
    const slots = new DynamoFlowSlots(dynamo, tableName);
    const slot = newSlot(1);
    await slots.acquire({ slot, jobId: 'h', type: 'echo', now: NOW, token: 1, rank: r(0, 'h') });
    const joined = await slots.acquire({ slot, jobId: 'x', type: 'echo', now: NOW, token: 1, rank: r(1, 'x') });
    expect(joined).toMatchObject({ kind: 'waiting', rank: r(1, 'x') });

    const { got, calls } = await deliveredAgain(slot, { rank: r(1, 'x'), waitsAs: r(1, 'x') });
    expect(got).toMatchObject({ kind: 'waiting', rank: r(1, 'x'), first: true });
    // the refused take, then the job's entry (still there) and the line's head: the slot item is not read
    expect(calls).toEqual(['UpdateItem', 'GetItem', 'Query']);
    // nothing written: h still holds the one place, and x still waits
    const state = await slots.state(slot);
    expect(state.holders.map((h) => h.jobId)).toEqual(['h']);
    expect(state.waiting).toBe(1);
  });
});

describe("an admission's transaction", () => {
  /** A place set with the admitter's mark, only while the job holds none: what an admission's update does. */
  const admission = (slot: Slot, jobId: string, me: string): TransactWriteItem[] => [
    {
      Update: {
        TableName: tableName,
        Key: keyOf(flowKeys.slot(slot.scope, slot.key)),
        UpdateExpression: 'SET hs.#id = :entry',
        ConditionExpression: 'attribute_not_exists(hs.#id)',
        ExpressionAttributeNames: { '#id': jobId },
        ExpressionAttributeValues: { ':entry': { M: { s: N(NOW), t: N(0), a: S(me) } } },
      },
    },
  ];
  const slotWith = async (slot: Slot, holders: Record<string, string>) => {
    const hs = Object.fromEntries(
      Object.entries(holders).map(([id, mark]) => [id, { M: { s: N(NOW), t: N(0), a: S(mark) } }]),
    );
    await dynamo.send(
      new PutItemCommand({
        TableName: tableName,
        Item: { ...keyOf(flowKeys.slot(slot.scope, slot.key)), hs: { M: hs }, iss: N(0), adm: N(0) },
      }),
    );
  };

  const markOf = async (slot: Slot, jobId: string) =>
    (await new SlotTable(dynamo, tableName).read(flowKeys.slot(slot.scope, slot.key)))?.hs?.M?.[jobId]?.M?.a?.S;

  it('cancelled on its one try, is refused with no read for its mark', async () => {
    const slot = newSlot(2);
    // another admitter set the place first
    await slotWith(slot, { x: 'other' });
    const { client, calls } = countingClient();
    const out = await transactOrMarked(new SlotTable(client, tableName), slot, 'x', 'me', admission(slot, 'x', 'me'));
    client.destroy();
    expect(out).toEqual(['ConditionalCheckFailed']);
    expect(calls).toEqual(['TransactWriteItems']);
  });

  it('of an admission, cancelled on its one try (another admitter moved first), reads no mark', async () => {
    const slots = new DynamoFlowSlots(dynamo, tableName);
    const slot = newSlot(1);
    await slots.acquire({ slot, jobId: 'h', type: 'echo', now: NOW, token: 1, rank: r(0, 'h') });
    await slots.acquire({ slot, jobId: 'x', type: 'echo', now: NOW, token: 1, rank: r(1, 'x') });
    await slots.release({ slot, jobId: 'h', token: 1 });
    // our admission's transaction waits; meanwhile another admitter hands x the place
    const held = holdingTransaction(() => true);
    const calls: string[] = [];
    held.client.middlewareStack.add(
      (next, context) => async (args) => {
        calls.push((context.commandName ?? '').replace(/Command$/, ''));
        return next(args);
      },
      { step: 'initialize', name: 'countCalls', priority: 'high' },
    );
    const ours: string[] = [];
    const mine = new DynamoFlowSlots(held.client, tableName).admit({
      slot,
      now: NOW + 1,
      onAdmitted: async (a) => void ours.push(a.jobId),
    });
    await held.reached;
    const theirs: string[] = [];
    await slots.admit({ slot, now: NOW + 1, onAdmitted: async (a) => void theirs.push(a.jobId) });
    held.open();
    await mine;
    held.client.destroy();
    expect(theirs).toEqual(['x']);
    expect(ours).toEqual([]);
    // read, head, the cancelled transaction; then a read that finds no place free: no read for a mark
    expect(calls).toEqual(['GetItem', 'Query', 'TransactWriteItems', 'GetItem']);
  });

  it('applied, its answer lost: the SDK retry is answered as applied (its client request token), with no read', async () => {
    const slot = newSlot(2);
    await slotWith(slot, {});
    const { client, calls } = countingClient();
    // the first try is applied, and its answer lost
    const lost = failFirstTry(client, (send) => send());
    const out = await transactOrMarked(new SlotTable(client, tableName), slot, 'x', 'me', admission(slot, 'x', 'me'));
    client.destroy();
    expect(lost()).toBe(1);
    expect(out).toBe('ok');
    expect(calls).toEqual(['TransactWriteItems']);
    expect(await markOf(slot, 'x')).toBe('me');
  });

  it('applied by an earlier try, and cancelled on the SDK retry because of it, stands: the mark is read', async () => {
    const slot = newSlot(2);
    await slotWith(slot, {});
    const { client, calls } = countingClient();
    // The first try reaches DynamoDB under a token the retry does not carry (a retry past the
    // token's window does the same), its answer lost: the retry meets its write and is cancelled.
    const lost = failFirstTry(client, () =>
      dynamo.send(new TransactWriteItemsCommand({ TransactItems: admission(slot, 'x', 'me') })),
    );
    const out = await transactOrMarked(new SlotTable(client, tableName), slot, 'x', 'me', admission(slot, 'x', 'me'));
    client.destroy();
    expect(lost()).toBe(1);
    expect(out).toBe('ok');
    expect(calls).toEqual(['TransactWriteItems', 'GetItem']);
  });

  it('another admitter’s place, seen on the SDK retry, is not taken for ours', async () => {
    const slot = newSlot(2);
    await slotWith(slot, { x: 'other' });
    const { client } = countingClient();
    // the first try never reaches DynamoDB
    const failed = failFirstTry(client, async () => {});
    const out = await transactOrMarked(new SlotTable(client, tableName), slot, 'x', 'me', admission(slot, 'x', 'me'));
    client.destroy();
    expect(failed()).toBe(1);
    expect(out).toEqual(['ConditionalCheckFailed']);
  });
});
