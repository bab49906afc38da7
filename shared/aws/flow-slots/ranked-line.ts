/**
 * The ranked line of a slot, for a type with priorities: a place freed goes to the waiting job of
 * lowest rank (shared/core/priority.ts), not to the oldest ticket.
 *
 * Entry item `flowq#<scope>#<key>` / `<rank key>`: the waiting job (`jobId`, `type`). The entries
 * of one line are one item collection, sorted by rank, so its head is one Query (Limit 1). The
 * slot item counts them in `w`, and a newcomer may take a free place only while `w` is 0.
 *
 * The count and the entries never disagree: a job joins with one transaction (its entry put,
 * and `w` counted up), and is admitted with one (its place set, `w` counted down, its entry
 * deleted). So a retry after a lost answer finds its own entry (the join's condition refuses it,
 * and the job still waits), and no admitter hands one entry two places. Entries have no TTL:
 * each one is consumed by its admission, even a job's that ended or expired meanwhile (its
 * place is then freed like any holder's that will not come).
 *
 * Write units (items ≤ 1 KB; a transaction costs 2 per item): a wait costs 4 (entry put and
 * count up), and its admission 4 (place and count down, entry delete): 8 against the
 * oldest-first line's 3. Reads: a head Query per admission (0.5 read unit); a waiting job's
 * duplicate delivery reads its entry besides the slot item.
 */
import {
  QueryCommand,
  TransactionCanceledException,
  type TransactWriteItem,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import type { Admitted, Slot } from '../../core/flow';
import { itemKey } from '../../core/table';
import { keyOf, N, S } from '../attributes';
import { translateAwsError } from '../errors';
import { AT_LIMIT, flowKeys, placeMarked, type SlotTable, UNDER_LIMIT } from './slot-table';

/** The partition of a slot's ranked line. */
export const linePk = (slot: Pick<Slot, 'scope' | 'key'>) => `flowq#${slot.scope}#${slot.key}`;

/** Why a transaction was cancelled: each item's reason code, in the order of its items. */
function reasons(error: unknown): string[] | undefined {
  if (!(error instanceof TransactionCanceledException)) return undefined;
  return (error.CancellationReasons ?? []).map((r) => r.Code ?? 'None');
}

/** Runs a transaction: `ok`, or the cancellation's reasons (a condition that failed, a conflict). */
async function transact(table: SlotTable, items: TransactWriteItem[], what: string): Promise<'ok' | string[]> {
  try {
    await table.client.send(new TransactWriteItemsCommand({ TransactItems: items }));
    return 'ok';
  } catch (error) {
    const why = reasons(error);
    if (why) return why;
    return translateAwsError(error, `DynamoDB TransactWriteItems (${what})`);
  }
}

export type JoinResult =
  /** The job waits under its rank (joined now, or it had joined before). */
  | { kind: 'waiting' }
  /** It need not wait (a place is free and no one waits), or it holds a place: take one. */
  | { kind: 'take' }
  /** Another writer changed the slot at the same moment: try again. */
  | { kind: 'conflict' };

/** Joins the line under `rank`, only while the job really has to wait. */
export async function joinLine(
  table: SlotTable,
  slot: Slot,
  job: { jobId: string; type: string; rank: string; now: number },
): Promise<JoinResult> {
  const out = await transact(
    table,
    [
      {
        Put: {
          TableName: table.tableName,
          Item: { ...keyOf(itemKey(linePk(slot), job.rank)), jobId: S(job.jobId), type: S(job.type), at: N(job.now) },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      {
        Update: {
          TableName: table.tableName,
          Key: keyOf(flowKeys.slot(slot.scope, slot.key)),
          UpdateExpression: 'ADD w :one',
          ConditionExpression: `attribute_not_exists(hs.#id) AND (${AT_LIMIT} OR iss > adm OR w > :zero)`,
          ExpressionAttributeNames: { '#id': job.jobId },
          ExpressionAttributeValues: { ':one': N(1), ':zero': N(0), ':limit': N(slot.limit) },
        },
      },
    ],
    'flow join',
  );
  if (out === 'ok') return { kind: 'waiting' };
  // its entry is there: an earlier join of it was applied (its count with it)
  if (out[0] === 'ConditionalCheckFailed') return { kind: 'waiting' };
  if (out[1] === 'ConditionalCheckFailed') return { kind: 'take' };
  return { kind: 'conflict' };
}

/** Whether the job's entry is in the line (strongly consistent). */
export async function inLine(table: SlotTable, slot: Slot, rank: string): Promise<boolean> {
  return (await table.read(itemKey(linePk(slot), rank))) !== undefined;
}

/** The time a rank key stands for (epoch ms): the digits before its `#`. */
export function rankTime(rank: string): number {
  return Number(rank.slice(0, rank.indexOf('#')));
}

/** The line's first entry (lowest rank), if any. */
export async function head(
  table: SlotTable,
  slot: Slot,
): Promise<{ jobId: string; type: string; rank: string } | undefined> {
  const out = await table.send('Query (flow line)', () =>
    table.client.send(
      new QueryCommand({
        TableName: table.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': S(linePk(slot)) },
        ConsistentRead: true,
        Limit: 1,
      }),
    ),
  );
  const item = out === 'refused' ? undefined : out.Items?.[0];
  if (!item?.jobId?.S || !item.type?.S || !item.sk?.S) return undefined;
  return { jobId: item.jobId.S, type: item.type.S, rank: item.sk.S };
}

/**
 * Hands a free place to the line's first entry: its place set (token 0: its attempt takes it
 * over when its message comes), the count down and its entry deleted, in one transaction. The
 * job admitted, if any (`empty`: the line has none); `me` marks the place this admitter writes, to tell its own write
 * (applied, answer lost) from another admitter's.
 */
export async function admitHead(
  table: SlotTable,
  input: { slot: Slot; now: number; me: string },
): Promise<Admitted | 'empty' | undefined> {
  const { slot, now, me } = input;
  const first = await head(table, slot);
  if (!first) return 'empty';
  const out = await transactOrMarked(table, slot, first.jobId, me, [
    {
      Update: {
        TableName: table.tableName,
        Key: keyOf(flowKeys.slot(slot.scope, slot.key)),
        UpdateExpression: 'SET hs.#id = if_not_exists(hs.#id, :entry) ADD w :minus',
        ConditionExpression: `w > :zero AND (${UNDER_LIMIT} OR attribute_exists(hs.#id))`,
        ExpressionAttributeNames: { '#id': first.jobId },
        ExpressionAttributeValues: {
          ':entry': { M: { s: N(now), t: N(0), a: S(me) } },
          ':minus': N(-1),
          ':zero': N(0),
          ':limit': N(slot.limit),
        },
      },
    },
    {
      Delete: {
        TableName: table.tableName,
        Key: keyOf(itemKey(linePk(slot), first.rank)),
        ConditionExpression: 'attribute_exists(pk)',
      },
    },
  ]);
  if (out === 'ok') return first;
  // Refused: another admitter moved first, the slot filled, or our own transaction was applied
  // and the answer lost. Ours when the place carries our mark: then the job is named, so it is
  // sent its message.
  return (await placeMarked(table, slot, first.jobId, me)) ? first : undefined;
}

/**
 * The admission's transaction. When it fails outright (its answer lost on every try), it may
 * still have been applied: the place carrying our mark says so, and the admission stands (the
 * job is named, and sent its message); otherwise the error goes on.
 */
async function transactOrMarked(
  table: SlotTable,
  slot: Slot,
  jobId: string,
  me: string,
  items: TransactWriteItem[],
): Promise<'ok' | string[]> {
  try {
    return await transact(table, items, 'flow admit');
  } catch (error) {
    if (await placeMarked(table, slot, jobId, me).catch(() => false)) return 'ok';
    throw error;
  }
}
