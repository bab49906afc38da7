/**
 * New jobs of one slot's ranked line that all have to wait join it in one transaction: their
 * entries put, and the slot item's counts (`w`, and each fair key's `wf:<key>`) moved once by
 * their number, instead of one transaction per job that rewrites the slot item each time.
 *
 * Why: a batch of 100 jobs of a tenant whose places are all taken otherwise makes 100
 * transactions on one slot item, one after the other; every admission and every other tenant's
 * join meanwhile competes with them for that item (DynamoDB refuses a transaction that meets
 * another on the same item). Joined {@link JOIN_CHUNK} at a time, the batch makes 4.
 *
 * Write units (items ≤ 1 KB; a transaction costs 2 per item): 2 per entry, and 2 per KB of the
 * slot item once per chunk, against 2 + 2 per KB of the slot item per job one by one (and the
 * refused take before each: 1 more).
 *
 * Only when every job of the chunk must wait as the slot item was read (its places all taken,
 * or a line already waiting), none holds a place, and no two share an id: the transaction's
 * conditions say the same, so a slot that changed meanwhile refuses it, and the caller goes
 * back to one `acquire` per job (which takes a place freed meanwhile, or finds an entry that an
 * earlier try of it wrote).
 */
import type { AttributeValue, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { fairLineOf } from '../../core/fair-share';
import { type AcquireInput, effectiveLimit, type Slot } from '../../core/flow';
import { itemKey } from '../../core/table';
import { keyOf, N, S } from '../attributes';
import { entrySk, linePk, nextInLine, transact } from './ranked-line';
import { AT_LIMIT, fairAttrs, flowKeys, type SlotItem, type SlotTable, slotItem } from './slot-table';

/**
 * The most jobs one transaction joins: 25 entries and the slot item, whose condition names each
 * job (`attribute_not_exists(hs.#idN)`) and whose update names each fair key: well inside
 * DynamoDB's 100 items and 4 KB per expression.
 */
export const JOIN_CHUNK = 25;

/** A transaction that met another writer of the slot item is sent again this many times. */
const CONFLICT_TRIES = 3;

/** What a chunk's join answers: each job waits (in the order given), or `undefined`: go one by one. */
export type ChunkJoin = { first: string | undefined; item: SlotItem } | undefined;

/** Whether `inputs` may be joined together: new jobs of one slot's ranked line, each once. */
export function joinable(inputs: readonly AcquireInput[]): boolean {
  const [one] = inputs;
  if (!one || inputs.length < 2) return false;
  const ids = new Set<string>();
  for (const input of inputs) {
    if (input.rank === undefined || input.ticket !== undefined || input.waitsAs !== undefined) return false;
    if (input.wait === false || input.slot.scope !== one.slot.scope || input.slot.key !== one.slot.key) return false;
    if (input.slot.limit !== one.slot.limit || Boolean(input.slot.fair) !== Boolean(one.slot.fair)) return false;
    if (ids.has(input.jobId)) return false;
    ids.add(input.jobId);
  }
  return true;
}

/** Whether a job must wait on the slot as read: its places all taken, or others already waiting. */
function mustWait(slot: Slot, item: SlotItem): boolean {
  return (
    item.holders.length >= effectiveLimit(slot, item.runtimeLimit) || item.issued > item.admitted || item.ranked > 0
  );
}

/**
 * Joins `chunk` (see {@link joinable}) to the line in one transaction; the job that is next in
 * line afterwards is `first`. Undefined when the slot does not make them all wait, or changed.
 */
export async function joinChunk(table: SlotTable, chunk: readonly AcquireInput[]): Promise<ChunkJoin> {
  for (let tries = 0; tries < CONFLICT_TRIES; tries++) {
    const [one] = chunk;
    if (!one) return undefined;
    const item = slotItem(await table.read(flowKeys.slot(one.slot.scope, one.slot.key)));
    if (!mustWait(one.slot, item) || chunk.some((c) => item.holders.some((h) => h.jobId === c.jobId))) return undefined;
    const { items, lines, since } = joinItems(table, chunk, item);
    const out = await transact(table, items, 'flow join many');
    if (out === 'ok') return { first: await firstAfter(table, one.slot, item, lines, since), item };
    if (out.includes('ValidationError')) {
      throw new Error(`DynamoDB refused the join of ${one.slot.scope}/${one.slot.key}: ${out.join(', ')}`);
    }
    // an entry already there (an earlier try of one of them), or the slot moved: one by one
    if (out.includes('ConditionalCheckFailed')) return undefined;
    await new Promise((r) => setTimeout(r, 10 * (tries + 1) + Math.random() * 20 * (tries + 1)));
  }
  return undefined;
}

/** The transaction's items: each entry's put, then the slot item's counts and conditions. */
function joinItems(
  table: SlotTable,
  chunk: readonly AcquireInput[],
  item: SlotItem,
): { items: TransactWriteItem[]; lines: Map<string, number>; since: Map<string, number> } {
  const [one] = chunk as [AcquireInput];
  /** Per line this chunk joins: its jobs, and the time its first one came (its `since`, when the key waited for nothing before). */
  const lines = new Map<string, number>();
  const since = new Map<string, number>();
  // past the cap of fair keys waiting, a new key joins the shared line (counting the keys this chunk adds)
  const waiting = [...item.fairWaiting];
  const puts: TransactWriteItem[] = chunk.map((c) => {
    const fairKey = c.slot.fair?.key;
    const line = fairKey === undefined ? undefined : fairLineOf(fairKey, waiting);
    if (line !== undefined) {
      if (!waiting.some((w) => w.key === line)) waiting.push({ key: line, waiting: 0, since: c.now });
      lines.set(line, (lines.get(line) ?? 0) + 1);
      if (!since.has(line)) since.set(line, c.now);
    }
    return {
      Put: {
        TableName: table.tableName,
        Item: {
          ...keyOf(itemKey(linePk(c.slot), entrySk(c.slot, c.rank as string, line))),
          jobId: S(c.jobId),
          type: S(c.type),
          at: N(c.now),
          ...(fairKey !== undefined ? { r: S(c.rank as string), f: S(fairKey) } : {}),
          ...(fairKey !== undefined && line !== fairKey ? { fl: S(line as string) } : {}),
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    };
  });
  const names: Record<string, string> = {};
  const values: Record<string, AttributeValue> = {
    ':n': N(chunk.length),
    ':zero': N(0),
    ':limit': N(one.slot.limit),
  };
  chunk.forEach((c, i) => {
    names[`#id${i}`] = c.jobId;
  });
  const adds = ['w :n'];
  const sets: string[] = [];
  [...lines].forEach(([line, count], i) => {
    const attrs = fairAttrs(line);
    names[`#wf${i}`] = attrs.count;
    names[`#ws${i}`] = attrs.since;
    values[`:c${i}`] = N(count);
    values[`:s${i}`] = N(since.get(line) as number);
    adds.push(`#wf${i} :c${i}`);
    sets.push(`#ws${i} = if_not_exists(#ws${i}, :s${i})`);
  });
  const notHolding = chunk.map((_, i) => `attribute_not_exists(hs.#id${i})`).join(' AND ');
  const update: TransactWriteItem = {
    Update: {
      TableName: table.tableName,
      Key: keyOf(flowKeys.slot(one.slot.scope, one.slot.key)),
      UpdateExpression: `ADD ${adds.join(', ')}${sets.length > 0 ? ` SET ${sets.join(', ')}` : ''}`,
      ConditionExpression: `${notHolding} AND (${AT_LIMIT} OR iss > adm OR w > :zero)`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  };
  return { items: [...puts, update], lines, since };
}

/**
 * The job next in line once the chunk joined (none while tickets wait: they go first). A line the
 * chunk adds waits since its first job came (the `ws` the transaction set), so that of two keys
 * new to the line the one that came first is next, as one join each would tell.
 */
async function firstAfter(
  table: SlotTable,
  slot: Slot,
  item: SlotItem,
  lines: ReadonlyMap<string, number>,
  since: ReadonlyMap<string, number>,
): Promise<string | undefined> {
  if (item.issued > item.admitted) return undefined;
  const fairWaiting = item.fairWaiting.map((w) => ({ ...w, waiting: w.waiting + (lines.get(w.key) ?? 0) }));
  for (const [key, count] of lines) {
    if (!item.fairWaiting.some((w) => w.key === key)) {
      fairWaiting.push({ key, waiting: count, since: since.get(key) ?? Number.MAX_SAFE_INTEGER });
    }
  }
  return (await nextInLine(table, slot, { ...item, ranked: item.ranked + 1, fairWaiting }))?.jobId;
}
