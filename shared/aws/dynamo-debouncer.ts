/**
 * {@link Debouncer} on the job table: one item per debounce key, `deb#<scope>#<key>`, holding the
 * window's pending run (`run`) and when it began (`first`, epoch ms). Opening is one UpdateItem
 * that returns the old values (no read first); closing is one UpdateItem conditioned on the run.
 * Items expire through the table's TTL a year after their last write (a window is never longer).
 */
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { type Debouncer, type DebounceWindow, MAX_DEBOUNCE_WAIT_SECONDS } from '../core/debounce';
import { keyOf, N, S } from './attributes';
import { translateAwsError } from './errors';

export const debounceKey = (scope: string, key: string) => `deb#${scope}#${key}`;

export class DynamoDebouncer implements Debouncer {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async open({ scope, key, jobId, now }: { scope: string; key: string; jobId: string; now: number }) {
    try {
      const out = await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: keyOf(debounceKey(scope, key)),
          UpdateExpression: 'SET run = :id, #first = if_not_exists(#first, :now), expiresAt = :exp ADD seq :one',
          ExpressionAttributeNames: { '#first': 'first' },
          ExpressionAttributeValues: {
            ':one': N(1),
            ':id': S(jobId),
            ':now': N(now),
            ':exp': N(Math.floor(now / 1000) + MAX_DEBOUNCE_WAIT_SECONDS),
          },
          ReturnValues: 'ALL_OLD',
        }),
      );
      const old = out.Attributes;
      const previous = old?.run?.S;
      const first = old?.first?.N === undefined ? now : Number(old.first.N);
      const seq = (old?.seq?.N === undefined ? 0 : Number(old.seq.N)) + 1;
      return { ...(previous !== undefined && previous !== jobId ? { previous } : {}), first, seq };
    } catch (error) {
      return translateAwsError(error, 'DynamoDB UpdateItem (debounce open)');
    }
  }

  async close({ scope, key, jobId }: { scope: string; key: string; jobId: string }): Promise<void> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: keyOf(debounceKey(scope, key)),
          UpdateExpression: 'SET lastRun = run, lastFirst = #first REMOVE run, #first',
          ConditionExpression: 'run = :id',
          ExpressionAttributeNames: { '#first': 'first' },
          ExpressionAttributeValues: { ':id': S(jobId) },
        }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return; // another job is the run now
      translateAwsError(error, 'DynamoDB UpdateItem (debounce close)');
    }
  }

  async adopt({ scope, key, from, to }: { scope: string; key: string; from: string; to: string }): Promise<boolean> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: keyOf(debounceKey(scope, key)),
          UpdateExpression: 'SET run = :to',
          ConditionExpression: 'run = :from',
          ExpressionAttributeValues: { ':from': S(from), ':to': S(to) },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      return translateAwsError(error, 'DynamoDB UpdateItem (debounce adopt)');
    }
  }

  async state({ scope, key }: { scope: string; key: string }): Promise<DebounceWindow> {
    try {
      const out = await this.client.send(
        new GetItemCommand({
          TableName: this.tableName,
          Key: keyOf(debounceKey(scope, key)),
          ConsistentRead: true,
        }),
      );
      const item = out.Item ?? {};
      const num = (v: AttributeValue | undefined) => (v?.N === undefined ? {} : { value: Number(v.N) });
      const first = num(item.first);
      const lastFirst = num(item.lastFirst);
      return {
        ...(item.run?.S !== undefined ? { run: item.run.S } : {}),
        ...('value' in first ? { first: first.value } : {}),
        ...(item.lastRun?.S !== undefined ? { lastRun: item.lastRun.S } : {}),
        ...('value' in lastFirst ? { lastFirst: lastFirst.value } : {}),
      };
    } catch (error) {
      return translateAwsError(error, 'DynamoDB GetItem (debounce)');
    }
  }
}
