/**
 * Several free places of one slot's ranked line handed on in one transaction: the places set,
 * the counts moved once by their number, and the entries deleted, instead of one transaction
 * (and one read of the slot item and one Query of the head) per place.
 *
 * Why: when several holders end at about the same time (a burst of short jobs, a batch of
 * deliveries), the places they free are handed on one after another. One by one, each costs a
 * read, a Query and a transaction on the slot item, and every other writer of that item (joins,
 * give-backs, other admitters) meets it there; the jobs whose places wait to be handed on wait
 * as long. Together, the places freed by a burst are handed on in one round.
 *
 * Which jobs: the same ones, in the same order, as one admission after another would pick from
 * the slot item as read. In a slot shared fairly, {@link planFairKeys} runs the fair rule over
 * the item as each admission in turn would leave it (the chosen key runs one more, waits one
 * less, and goes to the back of the keys of equal share); each key's first entries are then one
 * Query per key. Every admission of one call counts as made at its `now`, one by one as together.
 *
 * Conditions: the places free as read (`size(hs)` below the limit less the places handed, the
 * run-time limit as read), each key's count and since as read (as a single admission's), no
 * job already holding a place, and each entry still there. A change of any of these meanwhile
 * refuses the transaction, and the admitter reads again (one at a time); a refused round writes
 * nothing, but its read and Queries are spent. Not conditioned: a key that starts to wait, or
 * an entry that joins a key not served, meanwhile; the round is the one-by-one choice from the
 * item as read, and the next admission sees them.
 *
 * Write units (items ≤ 1 KB; a transaction costs 2 per item): 2 per KB of the slot item once,
 * and 2 per entry deleted, against 4 (2 per KB of the slot item and 2 for the entry) per place
 * one by one. Reads: the slot item once (strongly consistent: 1 read unit per 4 KB) and one
 * strongly consistent Query per key served (1 read unit per 4 KB of entries returned); the
 * admitter reads the slot item once more when the line as read ran out before the free places
 * did (a job that joined meanwhile is seen by no one else: see DynamoFlowSlots.admit).
 */
import type { AttributeValue, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { chooseFairKey, DEFAULT_FAIR_WEIGHT } from '../../core/fair-share';
import { type Admitted, effectiveLimit, type Slot } from '../../core/flow';
import { itemKey } from '../../core/table';
import { keyOf, N, S } from '../attributes';
import { admittedOf, type LineEntry, linePk, queryLine, transactOrMarked } from './ranked-line';
import { fairAttrs, flowKeys, holderEntry, type SlotItem, type SlotTable } from './slot-table';

/**
 * The most places one round hands on: 25 entries deleted and the slot item, whose update names
 * each job and each key served: well inside DynamoDB's 100 items and 4 KB per expression.
 */
export const ADMIT_CHUNK = 25;

/** How many times each key occurs in `keys`, in order of first occurrence. */
function countOf(keys: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const key of keys) out.set(key, (out.get(key) ?? 0) + 1);
  return out;
}

/**
 * The fair keys `places` admissions one after another would serve, in order, from the slot item
 * as read: after each, the key served runs one more and waits one less, and its `since` moves to
 * `now` (the back of the keys of equal share). Stops early when no key waits.
 */
export function planFairKeys(slot: Slot, item: SlotItem, places: number, now: number): string[] {
  const holders: { fair?: string; fairLine?: string }[] = [...item.holders];
  const waiting = item.fairWaiting.map((w) => ({ ...w }));
  const weightOf = (k: string) => item.fairWeights[k] ?? slot.fair?.weightOf(k) ?? DEFAULT_FAIR_WEIGHT;
  const plan: string[] = [];
  for (let k = 0; k < places; k++) {
    const key = chooseFairKey({ holders, waiting, weightOf });
    const w = waiting.find((x) => x.key === key);
    if (key === undefined || !w) break;
    plan.push(key);
    holders.push({ fairLine: key });
    w.waiting -= 1;
    w.since = now;
  }
  return plan;
}

/**
 * The entries `places` admissions one after another would hand places to, from the slot item as
 * read; `undefined` when the line holds fewer than the item counts (a read older than another
 * admission: the caller reads again).
 */
async function plannedEntries(
  table: SlotTable,
  slot: Slot,
  item: SlotItem,
  places: number,
  now: number,
): Promise<LineEntry[] | undefined> {
  if (item.fairWaiting.length === 0) {
    const entries = await queryLine(table, slot, { max: places, consistent: true, fairKey: undefined });
    // fewer than counted, or an entry of a fair key counted after this read: read again
    return entries.length === places && entries.every((e) => e.fair === undefined) ? entries : undefined;
  }
  const plan = planFairKeys(slot, item, places, now);
  const heads = new Map(
    await Promise.all(
      [...countOf(plan)].map(
        async ([key, count]) =>
          [key, await queryLine(table, slot, { max: count, consistent: true, fairKey: key })] as const,
      ),
    ),
  );
  const taken = new Map<string, number>();
  const entries: LineEntry[] = [];
  for (const key of plan) {
    const n = taken.get(key) ?? 0;
    const entry = heads.get(key)?.[n];
    // its line holds fewer than the item counts: a stale read
    if (!entry || (entry.fairLine ?? entry.fair) !== key) return undefined;
    taken.set(key, n + 1);
    entries.push(entry);
  }
  return entries;
}

/**
 * Hands up to `places` free places (at most {@link ADMIT_CHUNK}) to the entries one admission
 * after another would pick, in one transaction. The jobs admitted, in the order they were
 * picked; `undefined` when the slot changed since `item` was read (nothing written: read again).
 * `me` marks the places, to tell this write (applied, answer lost) from another admitter's.
 */
export async function admitHeads(
  table: SlotTable,
  input: { slot: Slot; item: SlotItem; places: number; now: number; me: string },
): Promise<Admitted[] | undefined> {
  const { slot, item, now, me } = input;
  const places = Math.min(input.places, ADMIT_CHUNK, item.ranked);
  if (places < 1) return [];
  const planned = await plannedEntries(table, slot, item, places, now);
  if (!planned) return undefined;
  // A job in line twice (two ranks, or its key's line and the shared one) or already holding a
  // place: its entry takes no place, and the update cannot name its place twice (DynamoDB refuses
  // overlapping paths). The round stops before it; the next admission (one at a time) uses it up.
  const seen = new Set(item.holders.map((h) => h.jobId));
  const stop = planned.findIndex((e) => {
    if (seen.has(e.jobId)) return true;
    seen.add(e.jobId);
    return false;
  });
  if (stop === 0) return undefined;
  const entries = stop < 0 ? planned : planned.slice(0, stop);
  // each fair key served, and how many of its entries (none in a line without fair keys)
  const served = countOf(item.fairWaiting.length > 0 ? entries.map((e) => (e.fairLine ?? e.fair) as string) : []);
  const [first] = entries;
  if (!first) return [];
  const names: Record<string, string> = {};
  const values: Record<string, AttributeValue> = {
    ':k': N(-entries.length),
    ':k0': N(entries.length),
    // the holders as read left this many places: after this round, as many or fewer
    ':room': N(effectiveLimit(slot, item.runtimeLimit) - entries.length + 1),
  };
  const sets: string[] = [];
  const conditions = ['w >= :k0', 'size(hs) < :room'];
  conditions.push(item.runtimeLimit ? 'lim = :lim' : 'attribute_not_exists(lim)');
  if (item.runtimeLimit) values[':lim'] = N(item.runtimeLimit.limit);
  entries.forEach((e, i) => {
    const place = holderEntry(now, 0, e.fair, e.fairLine);
    place.M = { ...place.M, a: S(me) };
    names[`#j${i}`] = e.jobId;
    values[`:p${i}`] = place;
    sets.push(`hs.#j${i} = :p${i}`);
    conditions.push(`attribute_not_exists(hs.#j${i})`);
  });
  const removes: string[] = [];
  const adds = ['w :k'];
  [...served].forEach(([key, count], i) => {
    const read = item.fairWaiting.find((w) => w.key === key);
    if (!read) throw new Error(`admitting on ${slot.scope}/${slot.key}: fair key ${key} served but not counted`);
    const attrs = fairAttrs(key);
    names[`#wf${i}`] = attrs.count;
    names[`#ws${i}`] = attrs.since;
    values[`:n${i}`] = N(read.waiting);
    values[`:since${i}`] = N(read.since);
    conditions.push(`#wf${i} = :n${i}`, `#ws${i} = :since${i}`);
    if (count >= read.waiting) removes.push(`#wf${i}`, `#ws${i}`);
    else {
      values[`:m${i}`] = N(-count);
      values[`:at${i}`] = N(now);
      adds.push(`#wf${i} :m${i}`);
      sets.push(`#ws${i} = :at${i}`);
    }
  });
  const update: NonNullable<TransactWriteItem['Update']> = {
    TableName: table.tableName,
    Key: keyOf(flowKeys.slot(slot.scope, slot.key)),
    UpdateExpression: [
      `SET ${sets.join(', ')}`,
      removes.length > 0 ? `REMOVE ${removes.join(', ')}` : '',
      `ADD ${adds.join(', ')}`,
    ]
      .filter(Boolean)
      .join(' '),
    ConditionExpression: conditions.join(' AND '),
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
  const jobIds = entries.map((e) => e.jobId);
  const out = await transactOrMarked(table, slot, jobIds, me, [
    { Update: update },
    ...entries.map(
      (e): TransactWriteItem => ({
        Delete: {
          TableName: table.tableName,
          Key: keyOf(itemKey(linePk(slot), e.sk)),
          ConditionExpression: 'attribute_exists(pk)',
        },
      }),
    ),
  ]);
  // refused: the slot moved since the read (a round whose answer was lost is told by its mark on
  // any of its places, in transactOrMarked: the first job's attempt may have taken its over since)
  return out === 'ok' ? entries.map(admittedOf) : undefined;
}
