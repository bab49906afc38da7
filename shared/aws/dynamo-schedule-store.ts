import {
  type AttributeValue,
  BatchGetItemCommand,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  TransactionCanceledException,
  type TransactWriteItem,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { JOB_TABLE, SINGLE_SK } from '../core/table';
import { ValidationError } from '../errors';
import { type OverlapPolicy, type Schedule, type ScheduleState, scheduleDueAt } from '../schedules/model';
import type { SchedulePayload, ScheduleStore } from '../schedules/ports';
import { keyOf, N, S } from './attributes';
import { translateAwsError } from './errors';

type Item = Record<string, AttributeValue>;

/** Keys of the two items of a schedule, and of the listing partition in the `byType` index. */
export const scheduleKeys = {
  schedule: (name: string) => `schedule#${name}`,
  payload: (name: string) => `schedule#${name}#payload`,
  /** `gsi1pk` of every schedule item: `_` never starts a job type, so no job shares it. */
  listing: '_schedules',
} as const;

/** The `byType` index (gsi1): schedules are listed from their own partition of it. */
const LISTING_INDEX = JOB_TABLE.indexes.find((index) => index.partitionKey === 'gsi1pk')?.name ?? 'byType';

/** The schedule item (everything but the payload), with its listing keys. */
export function toScheduleItem(schedule: Schedule): Item {
  return marshall(
    {
      ...schedule,
      pk: scheduleKeys.schedule(schedule.name),
      sk: SINGLE_SK,
      kind: 'schedule',
      gsi1pk: scheduleKeys.listing,
      gsi1sk: schedule.name,
      // a plain attribute, in no index: the supervisor reads every schedule (scheduleDueAt)
      dueAt: scheduleDueAt(schedule),
    },
    { removeUndefinedValues: true },
  );
}

const SCHEDULE_FIELDS = [
  'name',
  'type',
  'cron',
  'rate',
  'expression',
  'timezone',
  'startAt',
  'endAt',
  'anchorAt',
  'maxAttempts',
  'overlap',
  'priority',
  'state',
  'payloadHash',
  'createdAt',
  'updatedAt',
  'version',
  'nextFireAt',
  'lastFireAt',
  'lastRunId',
  'lastRunReservedAt',
  'lastRunConfirmUntil',
  'lastRunAfter',
  'skipped',
  'lastSkippedAt',
  'missed',
  'dueAt',
  'changedBy',
] as const;

export function fromScheduleItem(item: Item): Schedule {
  const raw = unmarshall(item) as Record<string, unknown>;
  const schedule: Record<string, unknown> = {};
  for (const field of SCHEDULE_FIELDS) if (raw[field] !== undefined) schedule[field] = raw[field];
  return {
    ...(schedule as unknown as Schedule),
    overlap: (raw.overlap as OverlapPolicy | undefined) ?? 'allow',
    state: (raw.state as ScheduleState | undefined) ?? 'enabled',
    skipped: (raw.skipped as number | undefined) ?? 0,
    missed: (raw.missed as number | undefined) ?? 0,
    version: (raw.version as number | undefined) ?? 0,
  };
}

function payloadItem(name: string, payload: SchedulePayload): Item {
  return marshall({
    pk: scheduleKeys.payload(name),
    sk: SINGLE_SK,
    kind: 'schedule-payload',
    name,
    payload: JSON.stringify(payload.payload),
    payloadHash: payload.payloadHash,
  });
}

function conditionFailed(error: unknown): boolean {
  if (error instanceof ConditionalCheckFailedException) return true;
  return (
    error instanceof TransactionCanceledException &&
    (error.CancellationReasons ?? []).some((reason) => reason.Code === 'ConditionalCheckFailed')
  );
}

/**
 * {@link ScheduleStore} on the job table. A schedule is two items: `schedule#<name>` (small,
 * rewritten at every fire with a write conditioned on `version`) and `schedule#<name>#payload`
 * (written by the API only). Schedules are listed from the `_schedules` partition of the
 * `byType` index, without a scan.
 *
 * @example
 * const schedules = new DynamoScheduleStore(new DynamoDBClient({}), 'orrery-jobs');
 */
export class DynamoScheduleStore implements ScheduleStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async get(name: string): Promise<Schedule | undefined> {
    try {
      const out = await this.client.send(
        new GetItemCommand({
          TableName: this.tableName,
          Key: keyOf(scheduleKeys.schedule(name)),
          ConsistentRead: true,
        }),
      );
      return out.Item ? fromScheduleItem(out.Item) : undefined;
    } catch (error) {
      return translateAwsError(error, 'DynamoDB GetItem (schedule)');
    }
  }

  async getPayload(name: string): Promise<SchedulePayload | undefined> {
    try {
      const out = await this.client.send(
        new GetItemCommand({
          TableName: this.tableName,
          Key: keyOf(scheduleKeys.payload(name)),
          ConsistentRead: true,
        }),
      );
      if (!out.Item) return undefined;
      const raw = unmarshall(out.Item) as { payload: string; payloadHash: string };
      return { payload: JSON.parse(raw.payload), payloadHash: raw.payloadHash };
    } catch (error) {
      return translateAwsError(error, 'DynamoDB GetItem (schedule payload)');
    }
  }

  async create(
    schedule: Schedule,
    payload: SchedulePayload,
  ): Promise<{ created: true } | { created: false; existing: Schedule }> {
    const notExists = 'attribute_not_exists(pk)';
    try {
      await this.client.send(
        new TransactWriteItemsCommand({
          TransactItems: [
            { Put: { TableName: this.tableName, Item: toScheduleItem(schedule), ConditionExpression: notExists } },
            {
              Put: {
                TableName: this.tableName,
                Item: payloadItem(schedule.name, payload),
                ConditionExpression: notExists,
              },
            },
          ],
        }),
      );
      return { created: true };
    } catch (error) {
      if (!conditionFailed(error)) return translateAwsError(error, 'DynamoDB TransactWriteItems (create schedule)');
      const existing = await this.get(schedule.name);
      if (!existing) throw new ValidationError(`schedule ${schedule.name} is being deleted; try again`);
      return { created: false, existing };
    }
  }

  async save(schedule: Schedule, expectedVersion: number, payload?: SchedulePayload): Promise<boolean> {
    const put = {
      TableName: this.tableName,
      Item: toScheduleItem(schedule),
      ConditionExpression: 'version = :v',
      ExpressionAttributeValues: { ':v': N(expectedVersion) },
    };
    try {
      if (payload === undefined) {
        await this.client.send(new PutItemCommand(put));
      } else {
        const items: TransactWriteItem[] = [
          { Put: put },
          { Put: { TableName: this.tableName, Item: payloadItem(schedule.name, payload) } },
        ];
        await this.client.send(new TransactWriteItemsCommand({ TransactItems: items }));
      }
      return true;
    } catch (error) {
      if (conditionFailed(error)) return false;
      return translateAwsError(error, 'DynamoDB write (save schedule)');
    }
  }

  async delete(name: string): Promise<boolean> {
    try {
      await this.client.send(
        new TransactWriteItemsCommand({
          TransactItems: [
            {
              Delete: {
                TableName: this.tableName,
                Key: keyOf(scheduleKeys.schedule(name)),
                ConditionExpression: 'attribute_exists(pk)',
              },
            },
            { Delete: { TableName: this.tableName, Key: keyOf(scheduleKeys.payload(name)) } },
          ],
        }),
      );
      return true;
    } catch (error) {
      if (conditionFailed(error)) return false;
      return translateAwsError(error, 'DynamoDB TransactWriteItems (delete schedule)');
    }
  }

  async list({
    limit,
    cursor,
  }: {
    limit: number;
    cursor?: string;
  }): Promise<{ schedules: Schedule[]; cursor?: string }> {
    let start: Item | undefined;
    if (cursor !== undefined) {
      try {
        start = marshall({
          pk: scheduleKeys.schedule(cursor),
          sk: SINGLE_SK,
          gsi1pk: scheduleKeys.listing,
          gsi1sk: cursor,
        });
      } catch {
        throw new ValidationError('invalid cursor', [{ path: 'cursor', message: 'use the cursor of a previous page' }]);
      }
    }
    try {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: LISTING_INDEX,
          KeyConditionExpression: 'gsi1pk = :p',
          ExpressionAttributeValues: { ':p': S(scheduleKeys.listing) },
          Limit: limit,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      const names = (page.Items ?? []).map((item) => String(unmarshall(item).gsi1sk));
      const schedules = await this.batchGet(names);
      const last = page.LastEvaluatedKey ? String(unmarshall(page.LastEvaluatedKey).gsi1sk) : undefined;
      return { schedules, ...(last !== undefined ? { cursor: last } : {}) };
    } catch (error) {
      return translateAwsError(error, 'DynamoDB Query (list schedules)');
    }
  }

  /** Schedule items by name, in the given order (missing ones left out). */
  private async batchGet(names: string[]): Promise<Schedule[]> {
    const found = new Map<string, Schedule>();
    for (let i = 0; i < names.length; i += 100) {
      let keys: Item[] = names.slice(i, i + 100).map((name) => keyOf(scheduleKeys.schedule(name)));
      for (let round = 0; keys.length > 0 && round < 10; round++) {
        const out = await this.client.send(
          new BatchGetItemCommand({ RequestItems: { [this.tableName]: { Keys: keys, ConsistentRead: true } } }),
        );
        for (const item of out.Responses?.[this.tableName] ?? []) {
          const schedule = fromScheduleItem(item);
          found.set(schedule.name, schedule);
        }
        keys = out.UnprocessedKeys?.[this.tableName]?.Keys ?? [];
        if (keys.length > 0) await new Promise((resolve) => setTimeout(resolve, 50 * (round + 1)));
      }
    }
    return names.flatMap((name) => {
      const schedule = found.get(name);
      return schedule ? [schedule] : [];
    });
  }
}
