import {
  type AttributeValue,
  type DynamoDBClient,
  QueryCommand,
  type QueryCommandOutput,
} from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { IndexEntry, IndexPage, IndexQuery, JobIndex, JobSummary } from '../core/control-ports';
import type { JobState } from '../core/states';
import { JOB_TABLE } from '../core/table';
import { DependencyError } from '../errors';
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
 * {@link JobIndex} on the job table's GSIs (`byType`, `byTypeState`): one `Query` per
 * partition, newest first (`ScanIndexForward: false`), reading only the projected summary.
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

  async query({ partition, below, atLeast, limit }: IndexQuery): Promise<IndexPage> {
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
      for (const item of out.Items ?? []) {
        const raw = unmarshall(item) as Record<string, unknown>;
        const sortKey = String(raw[index.sortKey]);
        if (both && sortKey === below) continue;
        entries.push({ sortKey, summary: toSummary(raw) });
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
}
