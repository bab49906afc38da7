/**
 * {@link Journal} on the job table: one item per entry, `job#<id>#<kind>#<name>` (`value` as JSON
 * text, `at`, `expiresAt`), and one per inbox signal, `job#<id>#inbox#<name>`. Each is written
 * once, with `attribute_not_exists(pk)` (the first write wins; a refused write returns the stored
 * item at no read cost), and read with a strongly consistent GetItem.
 */
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { InboxSignal, Journal, JournalEntry, JournalKind } from '../core/journal';
import { journalKey } from '../core/journal';
import { N, S } from './attributes';
import { translateAwsError } from './errors';

type Item = Record<string, AttributeValue>;

const entryOf = (item: Item): JournalEntry => ({
  value: JSON.parse(item.value?.S ?? 'null'),
  at: item.at?.S ?? '',
});

const signalOf = (item: Item): InboxSignal => ({
  payload: JSON.parse(item.payload?.S ?? 'null'),
  payloadHash: item.payloadHash?.S ?? '',
  at: item.at?.S ?? '',
});

export class DynamoJournal implements Journal {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async get({ jobId, kind, name }: { jobId: string; kind: JournalKind; name: string }) {
    const item = await this.read(journalKey(jobId, kind, name), 'journal entry');
    return item ? entryOf(item) : undefined;
  }

  async record(input: {
    jobId: string;
    kind: JournalKind;
    name: string;
    value: unknown;
    at: number;
    expiresAt: number;
  }): Promise<{ recorded: true } | { recorded: false; existing: JournalEntry }> {
    const item: Item = {
      pk: S(journalKey(input.jobId, input.kind, input.name)),
      value: S(JSON.stringify(input.value ?? null)),
      at: S(new Date(input.at).toISOString()),
      expiresAt: N(input.expiresAt),
    };
    const existing = await this.putOnce(item, 'journal entry');
    return existing ? { recorded: false, existing: entryOf(existing) } : { recorded: true };
  }

  async signal({ jobId, name }: { jobId: string; name: string }) {
    const item = await this.read(journalKey(jobId, 'inbox', name), 'signal');
    return item ? signalOf(item) : undefined;
  }

  async deliver(input: {
    jobId: string;
    name: string;
    signal: InboxSignal;
    expiresAt: number;
  }): Promise<{ stored: true } | { stored: false; existing: InboxSignal }> {
    const item: Item = {
      pk: S(journalKey(input.jobId, 'inbox', input.name)),
      payload: S(JSON.stringify(input.signal.payload ?? null)),
      payloadHash: S(input.signal.payloadHash),
      at: S(input.signal.at),
      expiresAt: N(input.expiresAt),
    };
    const existing = await this.putOnce(item, 'signal');
    return existing ? { stored: false, existing: signalOf(existing) } : { stored: true };
  }

  private async read(pk: string, what: string): Promise<Item | undefined> {
    try {
      const out = await this.client.send(
        new GetItemCommand({ TableName: this.tableName, Key: { pk: S(pk) }, ConsistentRead: true }),
      );
      return out.Item;
    } catch (error) {
      return translateAwsError(error, `DynamoDB GetItem (${what})`);
    }
  }

  /** Puts the item unless its key exists; returns the stored item when it does. */
  private async putOnce(item: Item, what: string): Promise<Item | undefined> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: item,
          ConditionExpression: 'attribute_not_exists(pk)',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return undefined;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        // a replay of our own put whose response was lost finds its own item: the caller compares
        return error.Item ?? item;
      }
      return translateAwsError(error, `DynamoDB PutItem (${what})`);
    }
  }
}
