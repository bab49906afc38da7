/**
 * {@link EventWaits} on the job table: one partition per match key, `pk` = `evmatch#<key>`, with
 * an item per waiter (`sk` = `wait#<job>#<incarnation>#<signal>`, a plain put: registering again
 * changes nothing that matters) and per sent event (`sk` = `sent#<event id>`, the event as JSON
 * text, a conditional put: the first send's record stands), strongly consistent Queries, TTL on
 * `expiresAt`.
 */
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  PutItemCommand,
  QueryCommand,
  type QueryCommandInput,
} from '@aws-sdk/client-dynamodb';
import {
  type EventWaiter,
  type EventWaits,
  firstSentSince,
  matchPartition,
  type SentEvent,
  sentKey,
  waiterKey,
} from '../core/event-waits';
import { keyOf, N, S } from './attributes';
import { translateAwsError } from './errors';

type Item = Record<string, AttributeValue>;

export class DynamoEventWaits implements EventWaits {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async register(key: string, waiter: EventWaiter, expiresAt: number): Promise<void> {
    await this.put({
      ...keyOf(waiterKey(key, waiter)),
      jobId: S(waiter.jobId),
      incarnation: S(waiter.incarnation),
      signal: S(waiter.signal),
      expiresAt: N(expiresAt),
    });
  }

  async firstSince(key: string, since: string): Promise<SentEvent | undefined> {
    const items = await this.query(
      {
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :s)',
        ExpressionAttributeValues: { ':pk': S(matchPartition(key)), ':s': S('sent#') },
      },
      false,
    );
    return firstSentSince(
      items.map((item) => JSON.parse(item.event?.S ?? 'null') as SentEvent),
      since,
    );
  }

  async recordSent(key: string, event: SentEvent, expiresAt: number): Promise<SentEvent> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: { ...keyOf(sentKey(key, event)), event: S(JSON.stringify(event)), expiresAt: N(expiresAt) },
          ConditionExpression: 'attribute_not_exists(pk)',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return event;
    } catch (error) {
      // sent before: its first record stands
      if (error instanceof ConditionalCheckFailedException && error.Item?.event?.S) {
        return JSON.parse(error.Item.event.S) as SentEvent;
      }
      return translateAwsError(error, 'DynamoDB PutItem (event sent)');
    }
  }

  async waiters(key: string, nowSeconds: number): Promise<EventWaiter[]> {
    const items = await this.query(
      {
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :w)',
        ExpressionAttributeValues: { ':pk': S(matchPartition(key)), ':w': S('wait#') },
      },
      false,
    );
    return items
      .filter((item) => Number(item.expiresAt?.N ?? 0) >= nowSeconds)
      .map((item) => ({
        jobId: item.jobId?.S ?? '',
        incarnation: item.incarnation?.S ?? '',
        signal: item.signal?.S ?? '',
      }));
  }

  private async put(item: Item): Promise<void> {
    try {
      await this.client.send(new PutItemCommand({ TableName: this.tableName, Item: item }));
    } catch (error) {
      translateAwsError(error, 'DynamoDB PutItem (event wait)');
    }
  }

  /** Reads the partition, strongly consistent; `one` stops at the first page. */
  private async query(input: Omit<QueryCommandInput, 'TableName'>, one: boolean): Promise<Item[]> {
    const items: Item[] = [];
    let from: Item | undefined;
    do {
      try {
        const out = await this.client.send(
          new QueryCommand({
            TableName: this.tableName,
            ConsistentRead: true,
            ...input,
            ...(from ? { ExclusiveStartKey: from } : {}),
          }),
        );
        items.push(...(out.Items ?? []));
        from = one ? undefined : out.LastEvaluatedKey;
      } catch (error) {
        return translateAwsError(error, 'DynamoDB Query (event wait)');
      }
    } while (from);
    return items;
  }
}
