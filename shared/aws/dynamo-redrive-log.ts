import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { RedriveLog, RedriveMethod, RedriveRecord } from '../core/control-ports';
import { keyOf, N, S } from './attributes';
import { translateAwsError } from './errors';

type Item = Record<string, AttributeValue>;

/**
 * The partition key of a job type's redrive record: `dlq#<type>`. No other item starts with
 * `dlq#` (jobs and the items they own are `job#...`, schedules `schedule#...`, flow control
 * `flow#`, `flowt#`, `deb#`, `pace#`, the supervisor's checkpoints `supervisor#...`), and a job
 * type has no `#` (`JOB_TYPE_PATTERN`).
 */
export const redriveKey = (type: string) => `dlq#${type}`;

const METHODS: readonly RedriveMethod[] = ['move-task', 'receive-send'];

/**
 * The record's item: its key, `type`, `by`, `at`, `method` and `moved` (when known). No index
 * key (`gsi1pk`, `gsi2pk`, `dueBucket`), so it is in no index: no listing, sweep or due-index
 * read meets it. No `expiresAt`: it stays until the next redrive of its type replaces it.
 */
function toItem(record: RedriveRecord): Item {
  return {
    ...keyOf(redriveKey(record.type)),
    type: S(record.type),
    by: S(record.by),
    at: S(record.at),
    method: S(record.method),
    ...(record.moved !== undefined ? { moved: N(record.moved) } : {}),
  };
}

function fromItem(item: Item): RedriveRecord | undefined {
  const method = item.method?.S as RedriveMethod | undefined;
  const { type, by, at } = { type: item.type?.S, by: item.by?.S, at: item.at?.S };
  if (type === undefined || by === undefined || at === undefined || !method || !METHODS.includes(method)) {
    return undefined;
  }
  return { type, by, at, method, ...(item.moved?.N !== undefined ? { moved: Number(item.moved.N) } : {}) };
}

/**
 * {@link RedriveLog} on the job table: one item per job type, `dlq#<type>`. A redrive writes it
 * with one PutItem (1 write unit: the item is a few hundred bytes, its ARN the most of it),
 * conditioned on the stored one being no later; `GET /dlq` reads it with one strongly
 * consistent GetItem (1 read unit).
 *
 * @example
 * const redrives = new DynamoRedriveLog(new DynamoDBClient({}), 'orrery-jobs');
 * await redrives.record({ type: 'echo', by: 'arn:aws:iam::123456789012:role/ops', at, method: 'move-task' });
 */
export class DynamoRedriveLog implements RedriveLog {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async record(record: RedriveRecord): Promise<boolean> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: toItem(record),
          // ISO 8601 times of toISOString() compare as strings in time order
          ConditionExpression: 'attribute_not_exists(pk) OR #at <= :at',
          ExpressionAttributeNames: { '#at': 'at' },
          ExpressionAttributeValues: { ':at': S(record.at) },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      return translateAwsError(error, 'DynamoDB PutItem (DLQ redrive record)');
    }
  }

  async last(type: string): Promise<RedriveRecord | undefined> {
    try {
      const out = await this.client.send(
        new GetItemCommand({ TableName: this.tableName, Key: keyOf(redriveKey(type)), ConsistentRead: true }),
      );
      return out.Item ? fromItem(out.Item) : undefined;
    } catch (error) {
      return translateAwsError(error, 'DynamoDB GetItem (DLQ redrive record)');
    }
  }
}
