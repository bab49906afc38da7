import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { dueBucket } from '../core/due';
import type { Job } from '../core/job';
import { JOB_TABLE, keys } from '../core/table';
import type { DueEntry, DueIndex } from '../supervisor/ports';
import { fromItem } from './dynamo-job-store';
import { translateAwsError } from './errors';

type Item = Record<string, AttributeValue>;

/** The sparse due index of `JOB_TABLE`. */
export const DUE_INDEX = JOB_TABLE.indexes.find((index) => index.partitionKey === 'dueBucket')?.name ?? 'byDue';
/** Partition key of the supervisor's checkpoint item. */
export const CHECKPOINT_KEY = 'supervisor#checkpoint';

const S = (s: string): AttributeValue => ({ S: s });
const N = (n: number): AttributeValue => ({ N: String(n) });

/**
 * {@link DueIndex} on the job table: queries of the `byDue` GSI (one minute bucket and shard at
 * a time, `dueAt <= upTo`), the checkpoint item, and the conditional moves of `dueAt`.
 *
 * @example
 * const index = new DynamoDueIndex(new DynamoDBClient({}), 'orrery-jobs');
 */
export class DynamoDueIndex implements DueIndex {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async query(bucket: string, upTo: number): Promise<DueEntry[]> {
    const entries: DueEntry[] = [];
    let start: Item | undefined;
    try {
      do {
        const page = await this.client.send(
          new QueryCommand({
            TableName: this.tableName,
            IndexName: DUE_INDEX,
            KeyConditionExpression: 'dueBucket = :b AND dueAt <= :upTo',
            ExpressionAttributeValues: { ':b': S(bucket), ':upTo': N(upTo) },
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        );
        for (const item of page.Items ?? []) {
          const raw = unmarshall(item) as { pk: string; dueAt: number };
          entries.push({ pk: raw.pk, dueAt: raw.dueAt });
        }
        start = page.LastEvaluatedKey;
      } while (start);
      return entries;
    } catch (error) {
      return translateAwsError(error, 'DynamoDB Query (due index)');
    }
  }

  async getCheckpoint(): Promise<number | undefined> {
    try {
      const out = await this.client.send(
        new GetItemCommand({ TableName: this.tableName, Key: { pk: S(CHECKPOINT_KEY) }, ConsistentRead: true }),
      );
      const minute = out.Item ? (unmarshall(out.Item) as { minute?: unknown }).minute : undefined;
      return typeof minute === 'number' ? minute : undefined;
    } catch (error) {
      return translateAwsError(error, 'DynamoDB GetItem (supervisor checkpoint)');
    }
  }

  async setCheckpoint(minute: number): Promise<void> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: { pk: S(CHECKPOINT_KEY), minute: N(minute), at: S(new Date(minute).toISOString()) },
        }),
      );
    } catch (error) {
      translateAwsError(error, 'DynamoDB PutItem (supervisor checkpoint)');
    }
  }

  async loadJob(id: string): Promise<{ job: Job; dueAt?: number; repairs: number } | undefined> {
    try {
      const out = await this.client.send(
        new GetItemCommand({ TableName: this.tableName, Key: { pk: S(keys.job(id)) }, ConsistentRead: true }),
      );
      if (!out.Item) return undefined;
      const raw = unmarshall(out.Item) as { dueAt?: unknown; repairs?: unknown };
      return {
        job: fromItem(out.Item),
        ...(typeof raw.dueAt === 'number' ? { dueAt: raw.dueAt } : {}),
        repairs: typeof raw.repairs === 'number' ? raw.repairs : 0,
      };
    } catch (error) {
      return translateAwsError(error, 'DynamoDB GetItem (supervisor)');
    }
  }

  async moveDue(
    pk: string,
    from: number,
    to: number | undefined,
    options: { repair?: boolean } = {},
  ): Promise<boolean> {
    const values: Record<string, AttributeValue> = { ':seen': N(from) };
    let update: string;
    if (to === undefined) {
      update = 'REMOVE dueBucket, dueAt';
    } else {
      const shardKey = pk.startsWith('job#') ? pk.slice('job#'.length) : pk;
      update = 'SET dueBucket = :bucket, dueAt = :to';
      values[':bucket'] = S(dueBucket(to, shardKey));
      values[':to'] = N(to);
      if (options.repair) {
        update += ', repairs = if_not_exists(repairs, :zero) + :one';
        values[':zero'] = N(0);
        values[':one'] = N(1);
      }
    }
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { pk: S(pk) },
          UpdateExpression: update,
          ConditionExpression: 'dueAt = :seen',
          ExpressionAttributeValues: values,
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      return translateAwsError(error, 'DynamoDB UpdateItem (move due)');
    }
  }
}
