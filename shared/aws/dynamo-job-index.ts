import {
  type AttributeValue,
  BatchGetItemCommand,
  type DynamoDBClient,
  QueryCommand,
  type QueryCommandOutput,
} from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { IndexEntry, IndexPage, IndexQuery, JobIndex, JobSummary } from '../core/control-ports';
import type { JobState } from '../core/states';
import { JOB_TABLE, keys } from '../core/table';
import { DependencyError } from '../errors';
import { keyOf } from './attributes';
import { translateAwsError } from './errors';

/** Pages a partition may take when DynamoDB answers with no items but a LastEvaluatedKey. */
const MAX_EMPTY_PAGES = 5;

function indexDefinition(name: IndexQuery['partition']['index']) {
  const index = JOB_TABLE.indexes.find((i) => i.name === name);
  if (!index) throw new Error(`JOB_TABLE has no index ${name}`);
  return index;
}

function toSummary(raw: Record<string, unknown>): JobSummary {
  return {
    id: String(raw.id),
    type: String(raw.type),
    state: String(raw.state) as JobState,
    createdAt: String(raw.createdAt),
    runAt: String(raw.runAt),
    attempts: typeof raw.attempts === 'number' ? raw.attempts : 0,
    finishedAt: typeof raw.finishedAt === 'string' ? raw.finishedAt : null,
  };
}

/**
 * The payload of a completed entry: inline (`payload`), or from its own item (`payloadKey`);
 * undefined when that item is gone (it outlives its job: see `PAYLOAD_RETENTION_DAYS`).
 */
function payloadOf(raw: Record<string, unknown>, items: Map<string, Record<string, unknown>>): unknown {
  const text =
    typeof raw.payload === 'string'
      ? raw.payload
      : typeof raw.payloadKey === 'string'
        ? items.get(raw.payloadKey)?.payload
        : undefined;
  return typeof text === 'string' ? JSON.parse(text) : undefined;
}

/** The summary attributes an index does not project, read from the table for its entries. */
function missingSummary(include: readonly string[]): string[] {
  return ['state', 'runAt', 'attempts', 'finishedAt'].filter((name) => !include.includes(name));
}

/**
 * {@link JobIndex} on the job table's GSIs (`byType`, the sparse `byTypeState`): one `Query`
 * per partition, newest first (`ScanIndexForward: false`). Both project only what never changes
 * (so no write after an entry's creation touches it), and the rest of each summary comes from
 * the job items, one eventually consistent BatchGetItem per page (0.5 read unit per job; an
 * entry whose job is gone is left out). With `withPayload`, that read also projects the payload
 * (no extra cost: an item is billed whole), and the payload items of jobs that have one
 * (`payloadKey`) are read with one more BatchGetItem (0.5 read unit per 4 KB each).
 *
 * @example
 * const index = new DynamoJobIndex(new DynamoDBClient({}), 'orrery-jobs');
 * const page = await index.query({ partition: { index: 'byType', key: 'echo#3' }, limit: 20 });
 */
export class DynamoJobIndex implements JobIndex {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async query({ partition, below, atLeast, limit, withPayload = false }: IndexQuery): Promise<IndexPage> {
    const index = indexDefinition(partition.index);
    const names: Record<string, string> = { '#pk': index.partitionKey };
    if (below !== undefined || atLeast !== undefined) names['#sk'] = index.sortKey;
    const values: Record<string, AttributeValue> = { ':pk': { S: partition.key } };
    let condition = '#pk = :pk';
    // Both bounds: BETWEEN is inclusive, so ask for one more and drop the excluded upper key.
    const both = below !== undefined && atLeast !== undefined;
    if (both) {
      condition += ' AND #sk BETWEEN :lo AND :hi';
      values[':lo'] = { S: atLeast };
      values[':hi'] = { S: below };
    } else if (below !== undefined) {
      condition += ' AND #sk < :hi';
      values[':hi'] = { S: below };
    } else if (atLeast !== undefined) {
      condition += ' AND #sk >= :lo';
      values[':lo'] = { S: atLeast };
    }
    const entries: IndexEntry[] = [];
    let startKey: Record<string, AttributeValue> | undefined;
    let more = false;
    for (let page = 0; page < MAX_EMPTY_PAGES; page++) {
      let out: QueryCommandOutput;
      try {
        out = await this.client.send(
          new QueryCommand({
            TableName: this.tableName,
            IndexName: index.name,
            KeyConditionExpression: condition,
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
            ScanIndexForward: false,
            Limit: limit + (both ? 1 : 0) - entries.length,
            ...(startKey ? { ExclusiveStartKey: startKey } : {}),
          }),
        );
      } catch (error) {
        return translateAwsError(error, 'DynamoDB Query (list jobs)');
      }
      const raws: Record<string, unknown>[] = [];
      for (const item of out.Items ?? []) {
        const raw = unmarshall(item) as Record<string, unknown>;
        if (both && String(raw[index.sortKey]) === below) continue;
        raws.push(raw);
      }
      const attributes = [...missingSummary(index.include), ...(withPayload ? ['payload', 'payloadKey'] : [])];
      const completed = await this.complete(raws, attributes);
      const payloads = withPayload ? await this.payloadItems(completed) : undefined;
      for (const raw of completed) {
        const entry: IndexEntry = { sortKey: String(raw[index.sortKey]), summary: toSummary(raw) };
        if (payloads) entry.payload = payloadOf(raw, payloads);
        entries.push(entry);
      }
      startKey = out.LastEvaluatedKey;
      more = startKey !== undefined;
      // DynamoDB may stop early (1 MB per page); keep reading until there is something to return.
      if (entries.length > 0 || !more) break;
    }
    if (entries.length > limit) {
      entries.length = limit;
      more = true;
    }
    if (entries.length === 0 && more) {
      throw new DependencyError(`DynamoDB Query (list jobs) returned ${MAX_EMPTY_PAGES} empty pages in a row`);
    }
    return { entries, more };
  }

  /** Index entries with the summary attributes their index lacks, from the job items; entries whose job is gone are dropped. */
  private async complete(raws: Record<string, unknown>[], missing: string[]): Promise<Record<string, unknown>[]> {
    if (missing.length === 0 || raws.length === 0) return raws;
    const pks = [...new Set(raws.map((raw) => keys.job(String(raw.id))))];
    const found = await this.batchGet(pks, ['id', ...missing], 'list jobs');
    return raws.flatMap((raw) => {
      const item = found.get(keys.job(String(raw.id)));
      return item ? [{ ...raw, ...item }] : [];
    });
  }

  /**
   * The payload items (`payloadKey`) of the jobs whose payload is too large for the status item:
   * one eventually consistent read of each (0.5 read unit per 4 KB), by its key.
   */
  private async payloadItems(raws: Record<string, unknown>[]): Promise<Map<string, Record<string, unknown>>> {
    const pks = [...new Set(raws.flatMap((raw) => (typeof raw.payloadKey === 'string' ? [raw.payloadKey] : [])))];
    if (pks.length === 0) return new Map();
    return this.batchGet(pks, ['pk', 'payload'], 'payload items');
  }

  /** Items by `pk` with the given attributes (eventually consistent, 100 keys per BatchGetItem); missing items are absent. */
  private async batchGet(
    pks: readonly string[],
    attributes: readonly string[],
    what: string,
  ): Promise<Map<string, Record<string, unknown>>> {
    const found = new Map<string, Record<string, unknown>>();
    const projected = attributes.includes('pk') ? attributes : ['pk', ...attributes];
    const names = Object.fromEntries(projected.map((name, i) => [`#a${i}`, name]));
    const all: Record<string, AttributeValue>[] = pks.map((pk) => keyOf(pk));
    // BatchGetItem takes at most 100 keys: a page between two bounds asks for limit + 1 entries.
    for (let start = 0; start < all.length; start += 100) {
      let pending = all.slice(start, start + 100);
      try {
        for (let round = 0; pending.length > 0 && round < 5; round++) {
          const out = await this.client.send(
            new BatchGetItemCommand({
              RequestItems: {
                [this.tableName]: {
                  Keys: pending,
                  ProjectionExpression: Object.keys(names).join(', '),
                  ExpressionAttributeNames: names,
                },
              },
            }),
          );
          for (const item of out.Responses?.[this.tableName] ?? []) {
            const raw = unmarshall(item) as Record<string, unknown>;
            found.set(String(raw.pk), raw);
          }
          pending = out.UnprocessedKeys?.[this.tableName]?.Keys ?? [];
          if (pending.length > 0) await new Promise((resolve) => setTimeout(resolve, 50 * (round + 1)));
        }
      } catch (error) {
        return translateAwsError(error, `DynamoDB BatchGetItem (${what})`);
      }
      if (pending.length > 0) throw new DependencyError(`DynamoDB BatchGetItem (${what}) left keys unprocessed`);
    }
    return found;
  }
}
