import {
  type AttributeValue,
  BatchGetItemCommand,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  QueryCommand,
  type QueryCommandInput,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { dueBucket } from '../core/due';
import type { Checkpoint, CheckpointName, DueEntry, DueIndex, DueKey } from '../core/due-index';
import type { Job } from '../core/job';
import { inboxOf } from '../core/journal';
import { isSettled } from '../core/states';
import { JOB_TABLE, keys, SINGLE_SK } from '../core/table';
import { keyOf, N, S } from './attributes';
import { translateAwsError } from './errors';
import { fromItem } from './job-item';

type Item = Record<string, AttributeValue>;

/** The sparse due index of `JOB_TABLE`. */
export const DUE_INDEX = JOB_TABLE.indexes.find((index) => index.partitionKey === 'dueBucket')?.name ?? 'byDue';
/** The `byType` index, which the creation sweep reads by creation minute. */
const BY_TYPE_INDEX = JOB_TABLE.indexes.find((index) => index.partitionKey === 'gsi1pk')?.name ?? 'byType';
/** Partition keys of the supervisor's checkpoint items. */
export const CHECKPOINT_KEY = 'supervisor#checkpoint';
export const SWEEP_CHECKPOINT_KEY = 'supervisor#sweep';

const checkpointKey = (name: CheckpointName) => (name === 'sweep' ? SWEEP_CHECKPOINT_KEY : CHECKPOINT_KEY);
const iso = (ms: number) => new Date(ms).toISOString();

/**
 * {@link DueIndex} on the job table: queries of the `byDue` GSI (one minute bucket and shard at
 * a time, `dueAt <= upTo`) and of `byType` by creation minute (the creation sweep), the
 * checkpoint items, and the conditional moves of `dueAt`.
 *
 * @example
 * const index = new DynamoDueIndex(new DynamoDBClient({}), 'orrery-jobs');
 */
export class DynamoDueIndex implements DueIndex {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  /** Every item of a query, all pages. */
  private async queryAll(
    input: Omit<QueryCommandInput, 'TableName' | 'ExclusiveStartKey'>,
    operation: string,
  ): Promise<Item[]> {
    const items: Item[] = [];
    let start: Item | undefined;
    try {
      do {
        const page = await this.client.send(
          new QueryCommand({ ...input, TableName: this.tableName, ...(start ? { ExclusiveStartKey: start } : {}) }),
        );
        items.push(...(page.Items ?? []));
        start = page.LastEvaluatedKey;
      } while (start);
      return items;
    } catch (error) {
      return translateAwsError(error, `DynamoDB Query (${operation})`);
    }
  }

  async query(bucket: string, upTo: number): Promise<DueEntry[]> {
    const items = await this.queryAll(
      {
        IndexName: DUE_INDEX,
        KeyConditionExpression: 'dueBucket = :b AND dueAt <= :upTo',
        ExpressionAttributeValues: { ':b': S(bucket), ':upTo': N(upTo) },
      },
      'due index',
    );
    return items.map((item) => {
      const raw = unmarshall(item) as { pk: string; sk?: string; dueAt: number };
      return { pk: raw.pk, ...(raw.sk !== undefined && raw.sk !== SINGLE_SK ? { sk: raw.sk } : {}), dueAt: raw.dueAt };
    });
  }

  async created(partition: string, fromMs: number, toMs: number): Promise<{ id: string; createdAt: number }[]> {
    // Sort keys are `<createdAt>#<id>`: BETWEEN takes every job of [from, to) (one created
    // exactly at `to` sorts above `iso(to)`, so it belongs to the next window).
    const items = await this.queryAll(
      {
        IndexName: BY_TYPE_INDEX,
        KeyConditionExpression: 'gsi1pk = :p AND gsi1sk BETWEEN :from AND :to',
        ExpressionAttributeValues: { ':p': S(partition), ':from': S(iso(fromMs)), ':to': S(iso(toMs)) },
        ProjectionExpression: 'id, gsi1sk',
      },
      'creation sweep',
    );
    return items.flatMap((item) => {
      const id = item.id?.S;
      const createdAt = Date.parse((item.gsi1sk?.S ?? '').slice(0, 24));
      return id === undefined ? [] : [{ id, createdAt: Number.isNaN(createdAt) ? fromMs : createdAt }];
    });
  }

  async unfinished(ids: readonly string[]): Promise<string[]> {
    const batches: string[][] = [];
    for (let i = 0; i < ids.length; i += 100) batches.push(ids.slice(i, i + 100));
    const out: string[] = [];
    // a few batches at once: a backlog sweep reads thousands of jobs
    let next = 0;
    const run = async () => {
      while (next < batches.length) out.push(...(await this.unfinishedOf(batches[next++] ?? [])));
    };
    await Promise.all(Array.from({ length: Math.min(8, batches.length) }, run));
    return out;
  }

  /** {@link unfinished} for at most 100 ids (one BatchGetItem, and its unprocessed keys). */
  private async unfinishedOf(ids: readonly string[]): Promise<string[]> {
    const out: string[] = [];
    let pending: Item[] = ids.map((id) => keyOf(keys.job(id)));
    try {
      for (let round = 0; pending.length > 0; round++) {
        if (round >= 8) throw new Error('DynamoDB BatchGetItem (creation sweep) left keys unprocessed');
        const page = await this.client.send(
          new BatchGetItemCommand({
            RequestItems: {
              [this.tableName]: {
                Keys: pending,
                // eventually consistent: half a read unit per job
                ProjectionExpression: 'id, #state, dueAt',
                ExpressionAttributeNames: { '#state': 'state' },
              },
            },
          }),
        );
        for (const item of page.Responses?.[this.tableName] ?? []) {
          const state = item.state?.S;
          if (state !== undefined && !isSettled(state as never) && item.dueAt === undefined && item.id?.S)
            out.push(item.id.S);
        }
        pending = (page.UnprocessedKeys?.[this.tableName]?.Keys ?? []) as Item[];
        if (pending.length > 0) await new Promise((resolve) => setTimeout(resolve, 50 * (round + 1)));
      }
      return out;
    } catch (error) {
      return translateAwsError(error, 'DynamoDB BatchGetItem (creation sweep)');
    }
  }

  async getCheckpoint(name: CheckpointName = 'due'): Promise<Checkpoint | undefined> {
    try {
      const out = await this.client.send(
        new GetItemCommand({ TableName: this.tableName, Key: keyOf(checkpointKey(name)), ConsistentRead: true }),
      );
      const item = out.Item ? (unmarshall(out.Item) as { minute?: unknown; retry?: unknown }) : undefined;
      if (typeof item?.minute !== 'number') return undefined;
      const retry = item.retry instanceof Set ? [...item.retry].map(Number).sort((a, b) => a - b) : [];
      return { minute: item.minute, retry };
    } catch (error) {
      return translateAwsError(error, 'DynamoDB GetItem (supervisor checkpoint)');
    }
  }

  /** One write, or two when minutes leave and join the retry list at once (a set's DELETE and ADD cannot share one). */
  async setCheckpoint(
    { minute, done, failed }: { minute: number; done: readonly number[]; failed: readonly number[] },
    name: CheckpointName = 'due',
  ): Promise<void> {
    const write = async (change?: { op: 'ADD' | 'DELETE'; minutes: readonly number[] }) => {
      try {
        await this.client.send(
          new UpdateItemCommand({
            TableName: this.tableName,
            Key: keyOf(checkpointKey(name)),
            UpdateExpression: `SET #minute = :minute, #at = :at${change ? ` ${change.op} #retry :change` : ''}`,
            ExpressionAttributeNames: {
              '#minute': 'minute',
              '#at': 'at',
              ...(change ? { '#retry': 'retry' } : {}),
            },
            ExpressionAttributeValues: {
              ':minute': N(minute),
              ':at': S(iso(minute)),
              ...(change ? { ':change': { NS: [...new Set(change.minutes)].map(String) } } : {}),
            },
          }),
        );
      } catch (error) {
        translateAwsError(error, 'DynamoDB UpdateItem (supervisor checkpoint)');
      }
    };
    if (done.length === 0 && failed.length === 0) return write();
    // The adds first, with the move: a save cut short after it still lists every failed minute
    // it moved past (a delete not made only costs a re-read). A pass's done and failed minutes
    // never overlap, so the order changes nothing for passes that overlap.
    if (failed.length > 0) await write({ op: 'ADD', minutes: failed });
    if (done.length > 0) await write({ op: 'DELETE', minutes: done });
  }

  async loadJob(id: string): Promise<{ job: Job; dueAt?: number; repairs: number } | undefined> {
    try {
      const out = await this.client.send(
        new GetItemCommand({ TableName: this.tableName, Key: keyOf(keys.job(id)), ConsistentRead: true }),
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
    key: DueKey,
    from: number | undefined,
    to: number,
    options: { repair?: boolean } = {},
  ): Promise<boolean> {
    const values: Record<string, AttributeValue> = { ':to': N(to) };
    // A job's entry is in the due index; a schedule's dueAt is read by listing the schedules.
    let update = 'SET dueAt = :to';
    // (a signal's inbox item, `job#<id>#<incarnation>#inbox`, is in the due index too, sharded by its job's id)
    const { pk, sk } = typeof key === 'string' ? { pk: key, sk: undefined } : key;
    if (pk.startsWith('job#')) {
      update += ', dueBucket = :bucket';
      values[':bucket'] = S(dueBucket(to, inboxOf({ pk, sk })?.jobId ?? pk.slice('job#'.length)));
    }
    if (options.repair) {
      update += ', repairs = if_not_exists(repairs, :zero) + :one';
      values[':zero'] = N(0);
      values[':one'] = N(1);
    }
    let condition = 'attribute_exists(pk) AND attribute_not_exists(dueAt)';
    if (from !== undefined) {
      condition = 'dueAt = :seen';
      values[':seen'] = N(from);
    }
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: keyOf(sk === undefined ? pk : { pk, sk }),
          UpdateExpression: update,
          ConditionExpression: condition,
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
