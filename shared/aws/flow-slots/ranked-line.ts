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
 * oldest-first line's 3. Reads: a strongly consistent head Query per admission (1 read unit);
 * a waiting job's duplicate delivery reads its entry besides the slot item.
 *
 * A slot shared fairly (a limit with `fairBy`) keeps one line per fair key inside the same item
 * collection: an entry's sort key starts with its fair key (`f<length>:<key>#`), so the head of
 * one key's line is a Query on that prefix. The slot item counts each key's entries (`wf:<key>`,
 * with `ws:<key>`, see slot-table.ts) in the same transactions as `w`, and each holder carries its
 * fair key: the admitter reads them with the slot item it reads anyway, and picks the key with
 * {@link chooseFairKey}. No write more than a ranked line's; the item grows by about 30 bytes per
 * fair key in line (a write costs 1 unit per KB).
 */
import {
  type AttributeValue,
  QueryCommand,
  TransactionCanceledException,
  type TransactWriteItem,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import { chooseFairKey, DEFAULT_FAIR_WEIGHT, SHARED_FAIR_LINE } from '../../core/fair-share';
import type { Admitted, Slot } from '../../core/flow';
import { itemKey } from '../../core/table';
import { keyOf, N, S } from '../attributes';
import { translateAwsError } from '../errors';
import {
  AT_LIMIT,
  fairAttrs,
  flowKeys,
  holderEntry,
  placeMarked,
  type SlotItem,
  type SlotTable,
  UNDER_LIMIT,
} from './slot-table';

/** The partition of a slot's ranked line. */
export const linePk = (slot: Pick<Slot, 'scope' | 'key'>) => `flowq#${slot.scope}#${slot.key}`;

/** Where a fair key's line starts within the slot's item collection. */
const fairPrefix = (fairKey: string) => `f${fairKey.length}:${fairKey}#`;

/**
 * The sort key of a job's entry: its rank, after its line's prefix in a slot shared fairly (its
 * fair key's, or `line`: the shared line past the cap).
 */
export const entrySk = (slot: Pick<Slot, 'fair'>, rank: string, line = slot.fair?.key) =>
  line === undefined ? rank : `${fairPrefix(line)}${rank}`;

/** A cancelled transaction: each item's reason; `retried`: the SDK sent it more than once (an earlier try's answer was lost). */
interface Cancelled {
  reasons: string[];
  retried: boolean;
}

/** Runs a transaction: `ok`, or how it was cancelled. */
async function sendTransaction(table: SlotTable, items: TransactWriteItem[], what: string): Promise<'ok' | Cancelled> {
  try {
    await table.client.send(new TransactWriteItemsCommand({ TransactItems: items }));
    return 'ok';
  } catch (error) {
    if (error instanceof TransactionCanceledException) {
      const reasons = (error.CancellationReasons ?? []).map((r) => r.Code ?? 'None');
      return { reasons, retried: (error.$metadata.attempts ?? 1) > 1 };
    }
    return translateAwsError(error, `DynamoDB TransactWriteItems (${what})`);
  }
}

/** Runs a transaction: `ok`, or the cancellation's reasons (a condition that failed, a conflict). */
export async function transact(table: SlotTable, items: TransactWriteItem[], what: string): Promise<'ok' | string[]> {
  const out = await sendTransaction(table, items, what);
  return out === 'ok' ? out : out.reasons;
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
  job: { jobId: string; type: string; rank: string; now: number; fairLine?: string },
): Promise<JoinResult> {
  // a job of a fair key joins its key's line, or past the cap the shared one (`fairLine`)
  const line = slot.fair ? (job.fairLine ?? slot.fair.key) : undefined;
  const fair = line === undefined ? undefined : fairAttrs(line);
  const out = await transact(
    table,
    [
      {
        Put: {
          TableName: table.tableName,
          Item: {
            ...keyOf(itemKey(linePk(slot), entrySk(slot, job.rank, line))),
            jobId: S(job.jobId),
            type: S(job.type),
            at: N(job.now),
            ...(slot.fair ? { r: S(job.rank), f: S(slot.fair.key) } : {}),
            ...(slot.fair && line !== slot.fair.key ? { fl: S(line as string) } : {}),
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      {
        Update: {
          TableName: table.tableName,
          Key: keyOf(flowKeys.slot(slot.scope, slot.key)),
          // a fair key's count and since when it waits go up with `w`
          UpdateExpression: fair ? 'ADD w :one, #wf :one SET #ws = if_not_exists(#ws, :now)' : 'ADD w :one',
          ConditionExpression: `attribute_not_exists(hs.#id) AND (${AT_LIMIT} OR iss > adm OR w > :zero)`,
          ExpressionAttributeNames: { '#id': job.jobId, ...(fair ? { '#wf': fair.count, '#ws': fair.since } : {}) },
          ExpressionAttributeValues: {
            ':one': N(1),
            ':zero': N(0),
            ':limit': N(slot.limit),
            ...(fair ? { ':now': N(job.now) } : {}),
          },
        },
      },
    ],
    'flow join',
  );
  if (out === 'ok') return { kind: 'waiting' };
  // its entry is there: an earlier join of it was applied (its count with it)
  if (out[0] === 'ConditionalCheckFailed') return { kind: 'waiting' };
  if (out[1] === 'ConditionalCheckFailed') return { kind: 'take' };
  // a request DynamoDB refuses (an item over its size): no use trying again
  if (out.includes('ValidationError')) {
    throw new Error(`DynamoDB refused the join of ${slot.scope}/${slot.key}: ${out.join(', ')}`);
  }
  return { kind: 'conflict' };
}

/** Whether the job's entry is in the line (strongly consistent). */
export async function inLine(
  table: SlotTable,
  slot: Pick<Slot, 'scope' | 'key' | 'fair'>,
  rank: string,
): Promise<boolean> {
  if ((await table.read(itemKey(linePk(slot), entrySk(slot, rank)))) !== undefined) return true;
  // past the cap of fair keys, the job waits in the shared line
  return (
    slot.fair !== undefined &&
    (await table.read(itemKey(linePk(slot), entrySk(slot, rank, SHARED_FAIR_LINE)))) !== undefined
  );
}

/** An entry of a ranked line: its job, its rank and (a slot shared fairly) its fair key. */
export interface LineEntry {
  jobId: string;
  type: string;
  rank: string;
  /** Its sort key (the rank, after the fair key's prefix in a slot shared fairly). */
  sk: string;
  fair?: string;
  /** Its line, when not its fair key's own (the shared line). */
  fairLine?: string;
  /** When it joined (epoch ms). */
  joinedAt?: number;
}

/**
 * The line's first entry (lowest rank), if any; with `fairKey`, the first of that fair key's
 * line. (In a slot shared fairly, the whole collection's first is the first of the lowest key.)
 */
export async function head(table: SlotTable, slot: Slot, fairKey?: string): Promise<LineEntry | undefined> {
  return (await queryLine(table, slot, { max: 1, consistent: true, fairKey }))[0];
}

/** The first `max` entries of the line by rank (of one fair key's line, with `fairKey`); eventually consistent. */
export function entries(table: SlotTable, slot: Slot, max: number, fairKey?: string): Promise<LineEntry[]> {
  return queryLine(table, slot, { max, consistent: false, fairKey });
}

/** The first `max` entries of the line by rank (of one fair key's line, with `fairKey`). */
export async function queryLine(
  table: SlotTable,
  slot: Pick<Slot, 'scope' | 'key'>,
  input: { max: number; consistent: boolean; fairKey: string | undefined },
): Promise<LineEntry[]> {
  if (input.max <= 0) return [];
  const { fairKey } = input;
  const out = await table.send('Query (flow line)', () =>
    table.client.send(
      new QueryCommand({
        TableName: table.tableName,
        KeyConditionExpression: fairKey === undefined ? 'pk = :pk' : 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: {
          ':pk': S(linePk(slot)),
          ...(fairKey === undefined ? {} : { ':prefix': S(fairPrefix(fairKey)) }),
        },
        ...(input.consistent ? { ConsistentRead: true } : {}),
        Limit: input.max,
      }),
    ),
  );
  return (out === 'refused' ? [] : (out.Items ?? [])).flatMap((item) => {
    const entry = lineEntry(item);
    return entry ? [entry] : [];
  });
}

function lineEntry(item: Record<string, AttributeValue> | undefined): LineEntry | undefined {
  if (!item?.jobId?.S || !item.type?.S || !item.sk?.S) return undefined;
  const rank = item.r?.S ?? item.sk.S;
  const fair = item.f?.S;
  const fairLine = item.fl?.S;
  return {
    jobId: item.jobId.S,
    type: item.type.S,
    rank,
    sk: item.sk.S,
    ...(fair === undefined ? {} : { fair }),
    ...(fairLine === undefined ? {} : { fairLine }),
    ...(item.at?.N === undefined ? {} : { joinedAt: Number(item.at.N) }),
  };
}

/**
 * The entry a freed place goes to: the line's head, or, in a slot shared fairly, the head of the
 * fair key {@link chooseFairKey} picks from the slot item as read (its holders' keys, the keys in
 * line, and their weights: a weight set at run time, else the spec's).
 */
export async function nextInLine(table: SlotTable, slot: Slot, item: SlotItem): Promise<LineEntry | undefined> {
  // the fair rule whenever keys wait, whoever admits (a limit raised at run time knows no fair key)
  if (item.fairWaiting.length === 0) return head(table, slot);
  const key = chooseFairKey({
    holders: item.holders,
    waiting: item.fairWaiting,
    weightOf: (k) => item.fairWeights[k] ?? slot.fair?.weightOf(k) ?? DEFAULT_FAIR_WEIGHT,
  });
  // (a key counted with no entry cannot be: they change in one transaction; the whole line's
  // head then, so that no entry is stranded)
  return (key === undefined ? undefined : await head(table, slot, key)) ?? head(table, slot);
}

/** What an admission tells of the entry it handed a place: its job, rank and fair key. */
export const admittedOf = (entry: LineEntry): Admitted => ({
  jobId: entry.jobId,
  type: entry.type,
  rank: entry.rank,
  ...(entry.fair === undefined ? {} : { fair: entry.fair }),
});

/**
 * Hands a free place to the line's first entry: its place set (token 0: its attempt takes it
 * over when its message comes), the count down and its entry deleted, in one transaction. The
 * job admitted, if any (`empty`: the line has none); `me` marks the place this admitter writes, to tell its own write
 * (applied, answer lost) from another admitter's.
 */
export async function admitHead(
  table: SlotTable,
  input: { slot: Slot; item: SlotItem; now: number; me: string },
): Promise<Admitted | 'empty' | undefined> {
  const { slot, item, now, me } = input;
  const first = await nextInLine(table, slot, item);
  if (!first) return 'empty';
  const place = holderEntry(now, 0, first.fair, first.fairLine);
  place.M = { ...place.M, a: S(me) };
  const update = admitUpdate(table, { slot, item, first, now, place });
  if (!update) return undefined;
  const out = await transactOrMarked(table, slot, first.jobId, me, [
    { Update: update },
    {
      Delete: {
        TableName: table.tableName,
        Key: keyOf(itemKey(linePk(slot), first.sk)),
        ConditionExpression: 'attribute_exists(pk)',
      },
    },
  ]);
  // refused: another admitter moved first, or the slot filled
  return out === 'ok' ? admittedOf(first) : undefined;
}

/**
 * The admission's update of the slot item: the place set, `w` counted down and, for an entry of
 * a fair key, that key's count down and its `since` moved to now (it goes to the back of the keys
 * of equal share), or both removed with its last entry. The key's count is conditioned on what
 * was read, so an admission on a stale read is refused and looked at again.
 */
function admitUpdate(
  table: SlotTable,
  input: { slot: Slot; item: SlotItem; first: LineEntry; now: number; place: AttributeValue },
): NonNullable<TransactWriteItem['Update']> | undefined {
  const { slot, item, first, now, place } = input;
  const base = {
    TableName: table.tableName,
    Key: keyOf(flowKeys.slot(slot.scope, slot.key)),
    ExpressionAttributeValues: {
      ':entry': place,
      ':minus': N(-1),
      ':zero': N(0),
      ':limit': N(slot.limit),
    } as Record<string, AttributeValue>,
  };
  const when = `w > :zero AND (${UNDER_LIMIT} OR attribute_exists(hs.#id))`;
  if (first.fair === undefined) {
    return {
      ...base,
      UpdateExpression: 'SET hs.#id = if_not_exists(hs.#id, :entry) ADD w :minus',
      ConditionExpression: when,
      ExpressionAttributeNames: { '#id': first.jobId },
    };
  }
  const line = first.fairLine ?? first.fair;
  const fair = fairAttrs(line);
  const names = { '#id': first.jobId, '#wf': fair.count, '#ws': fair.since };
  const read = item.fairWaiting.find((w) => w.key === line);
  // not counted in the item as read: a read older than the entry's join; the admitter reads again
  if (!read) return undefined;
  // the key's count and since as read: a concurrent admission of the key (which moves both)
  // refuses this one, and the admitter reads again, so no two choices rest on one read
  const seen = `${when} AND #wf = :n AND #ws = :since`;
  const values = { ...base.ExpressionAttributeValues, ':n': N(read.waiting), ':since': N(read.since) };
  return read.waiting <= 1
    ? {
        ...base,
        UpdateExpression: 'SET hs.#id = if_not_exists(hs.#id, :entry) REMOVE #wf, #ws ADD w :minus',
        ConditionExpression: seen,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }
    : {
        ...base,
        UpdateExpression: 'SET hs.#id = if_not_exists(hs.#id, :entry), #ws = :now ADD w :minus, #wf :minus',
        ConditionExpression: seen,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: { ...values, ':now': N(now) },
      };
}

/**
 * The admission's transaction: `ok` when it was applied, else the cancellation's reasons. A try
 * whose answer was lost may have been applied all the same: when the transaction fails outright
 * (its answer lost on every try), or is cancelled on the SDK's retry (the retry meets the first
 * try's own write), the place carrying our mark says it was, and the admission stands (the job is
 * named, and sent its message); otherwise the error goes on, or the refusal. A transaction sent
 * once and cancelled was not applied: no read is made to tell.
 */
export async function transactOrMarked(
  table: SlotTable,
  slot: Slot,
  jobId: string | readonly string[],
  me: string,
  items: TransactWriteItem[],
): Promise<'ok' | string[]> {
  let out: 'ok' | Cancelled;
  try {
    out = await sendTransaction(table, items, 'flow admit');
  } catch (error) {
    if (await placeMarked(table, slot, jobId, me).catch(() => false)) return 'ok';
    throw error;
  }
  if (out === 'ok') return 'ok';
  return out.retried && (await placeMarked(table, slot, jobId, me)) ? 'ok' : out.reasons;
}
