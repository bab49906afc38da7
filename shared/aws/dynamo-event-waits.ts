/**
 * {@link EventWaits} on the job table: one partition per match key, `pk` = `evmatch#<key>`, with
 * an item per waiter (`sk` = `wait#<job>#<incarnation>#<signal>`) and per sent event
 * (`sk` = `sent#<at>#<event id>`, the event as JSON text). Plain puts (a second put of the same
 * item changes nothing that matters), strongly consistent Queries, TTL on `expiresAt`.
 */
import {
  type AttributeValue,
  type DynamoDBClient,
  PutItemCommand,
  QueryCommand,
  type QueryCommandInput,
} from '@aws-sdk/client-dynamodb';
import {
  type EventWaiter,
  type EventWaits,
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
    const [item] = await this.query(
      {
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
        ExpressionAttributeValues: { ':pk': S(matchPartition(key)), ':from': S(`sent#${since}`), ':to': S('sent#~') },
        Limit: 1,
      },
      true,
    );
    return item ? (JSON.parse(item.event?.S ?? 'null') as SentEvent) : undefined;
  }

  async recordSent(key: string, event: SentEvent, expiresAt: number): Promise<void> {
    await this.put({ ...keyOf(sentKey(key, event)), event: S(JSON.stringify(event)), expiresAt: N(expiresAt) });
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
