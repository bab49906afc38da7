/**
 * The job's status item, found from the calls alone (no knowledge of the data model): the item
 * the most UpdateItems of a trace went to. Every write of it (its create, if that is a PutItem
 * of the same key, and every UpdateItem) is checked for its table write units, and the item is
 * read back (uncounted) after each step of the trace for its size as DynamoDB bills it.
 * Writes inside a TransactWriteItems or BatchWriteItem are not followed.
 */
import { type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { type CallRecord, type Item, itemBytes } from './counting-middleware';

export interface StatusItemFigures {
  /** Writes of the status item per job (create, claims, retries, final write). */
  writes: number;
  /** Largest table write units of any single write of the status item. */
  maxTableUnits: number;
  /** Largest table write units of any single UpdateItem of it. */
  maxUpdateTableUnits: number;
  /** Largest size of the item read back after each step, in bytes (DynamoDB's count: names plus values). */
  maxBytes: number;
}

const keyString = (table: string, key: Item) =>
  `${table}|${JSON.stringify(
    Object.keys(key)
      .sort()
      .map((name) => [name, key[name]]),
  )}`;

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The table and key most UpdateItems went to, or undefined when there was none. */
export function statusKey(calls: readonly CallRecord[]): { table: string; key: Item } | undefined {
  const counts = new Map<string, { table: string; key: Item; n: number }>();
  for (const call of calls) {
    if (call.operation !== 'UpdateItem' || !call.table || !call.key) continue;
    const id = keyString(call.table, call.key);
    const entry = counts.get(id) ?? { table: call.table, key: call.key, n: 0 };
    entry.n += 1;
    counts.set(id, entry);
  }
  return [...counts.values()].sort((a, b) => b.n - a.n)[0];
}

/** The calls that wrote the item with this key: UpdateItem/DeleteItem of it, PutItem of an item with that key. */
export function writesOf(calls: readonly CallRecord[], target: { table: string; key: Item }): CallRecord[] {
  return calls.filter((call) => {
    if (call.table !== target.table || call.capacity?.kind !== 'write') return false;
    if (call.key) return keyString(call.table, call.key) === keyString(target.table, target.key);
    const item = call.item;
    return item !== undefined && Object.keys(target.key).every((name) => same(item[name], target.key[name]));
  });
}

/** Reads one item (strongly consistent) and returns its size, or 0 when it is gone. */
export async function itemSize(dynamo: DynamoDBClient, target: { table: string; key: Item }): Promise<number> {
  const out = await dynamo.send(
    new GetItemCommand({ TableName: target.table, Key: target.key as never, ConsistentRead: true }),
  );
  return out.Item ? itemBytes(out.Item as Item) : 0;
}

/** Follows one trace: call `probe` after each step, then `finish` with all the trace's calls. */
export class StatusItemProbe {
  private maxBytes = 0;

  constructor(private readonly dynamo: DynamoDBClient) {}

  async probe(calls: readonly CallRecord[]): Promise<void> {
    const target = statusKey(calls);
    if (target) this.maxBytes = Math.max(this.maxBytes, await itemSize(this.dynamo, target));
  }

  finish(calls: readonly CallRecord[]): StatusItemFigures | undefined {
    const target = statusKey(calls);
    if (!target) return undefined;
    const writes = writesOf(calls, target);
    const units = (list: CallRecord[]) => Math.max(0, ...list.map((c) => c.capacity?.table ?? 0));
    return {
      writes: writes.length,
      maxTableUnits: units(writes),
      maxUpdateTableUnits: units(writes.filter((c) => c.operation === 'UpdateItem')),
      maxBytes: this.maxBytes,
    };
  }
}

/** Combines traces of the same path: writes averaged per job, the maxima kept. */
export function combine(figures: StatusItemFigures[]): StatusItemFigures | undefined {
  if (figures.length === 0) return undefined;
  return {
    writes: Math.round((figures.reduce((sum, f) => sum + f.writes, 0) / figures.length) * 100) / 100,
    maxTableUnits: Math.max(...figures.map((f) => f.maxTableUnits)),
    maxUpdateTableUnits: Math.max(...figures.map((f) => f.maxUpdateTableUnits)),
    maxBytes: Math.max(...figures.map((f) => f.maxBytes)),
  };
}
