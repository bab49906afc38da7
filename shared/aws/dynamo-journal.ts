/**
 * {@link Journal} on the job table: one item per entry, `pk` = `job#<id>#<incarnation>#journal`,
 * `sk` = `<kind>#<name>` (`value` as JSON text, `at`, `expiresAt`), and one per inbox signal,
 * `pk` = `job#<id>#<incarnation>#inbox`, `sk` = `<name>` (with a `byDue` entry when the sender
 * asks for one). Each is written once, with `attribute_not_exists(pk)` (the first write wins; a
 * refused write returns the stored item at no read cost). A run loads its journal with one
 * strongly consistent Query (pages of 1 MB); an entry or a signal alone is read with a strongly
 * consistent GetItem.
 */

import { gunzipSync, gzipSync } from 'node:zlib';
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
} from '@aws-sdk/client-dynamodb';
import { dueBucket } from '../core/due';
import type {
  EntryMark,
  InboxDelivery,
  InboxSignal,
  Journal,
  JournalEntry,
  JournalKind,
  JournalRecord,
  JournalScope,
  RecordedEntries,
} from '../core/journal';
import { inboxKey, journalKey } from '../core/journal';
import type { ItemKey } from '../core/table';
import { keyOf, N, S } from './attributes';
import { translateAwsError } from './errors';
import { itemBytes, ONE_WRITE_UNIT_BYTES } from './job-item';

type Item = Record<string, AttributeValue>;

/**
 * Values whose item would take more than one write unit are stored gzipped (`valueGz`), when that
 * brings the item within one: a step result of about 1 KB of ordinary JSON then costs 1 write
 * unit rather than 2. Smaller values stay plain text, readable in the console.
 */
const COMPRESS_ABOVE_BYTES = 600;

/** The entry an item holds. */
export const journalEntryOf = (item: Item): JournalEntry => {
  const entry: JournalEntry = {
    value: JSON.parse(item.valueGz?.B ? gunzipSync(item.valueGz.B).toString('utf8') : (item.value?.S ?? 'null')),
    at: item.at?.S ?? '',
  };
  if (item.seq?.N === undefined) return entry;
  const mark: EntryMark = { seq: Number(item.seq.N) };
  if (item.ver?.S) mark.version = item.ver.S;
  if (item.patches?.SS?.length) mark.patches = [...item.patches.SS];
  if (item.racing?.BOOL) mark.racing = true;
  if (item.nested?.BOOL) mark.nested = true;
  return { ...entry, mark };
};

/**
 * An entry's mark (core/replay.ts) as attributes of its item: `seq` (N), `ver` (S) and `patches`
 * (SS). Short names: they ride in every entry's item, about 10 bytes plus the version's length.
 */
function markAttributes(mark: EntryMark | undefined): Item {
  if (!mark) return {};
  return {
    seq: N(mark.seq),
    ...(mark.version ? { ver: S(mark.version) } : {}),
    ...(mark.patches?.length ? { patches: { SS: [...new Set(mark.patches)] } } : {}),
    ...(mark.racing ? { racing: { BOOL: true } } : {}),
    ...(mark.nested ? { nested: { BOOL: true } } : {}),
  };
}

/** The entry's value attribute: plain JSON text, or gzipped JSON when that saves a write unit. */
function valueAttribute(value: unknown, rest: Item): Item {
  const text = JSON.stringify(value ?? null);
  const plain: Item = { ...rest, value: S(text) };
  if (text.length < COMPRESS_ABOVE_BYTES || itemBytes(plain) <= ONE_WRITE_UNIT_BYTES) return plain;
  const packed: Item = { ...rest, valueGz: { B: gzipSync(text) } };
  return writeUnitsOf(itemBytes(packed)) < writeUnitsOf(itemBytes(plain)) ? packed : plain;
}

/** The item a journal entry is written as. */
export function journalEntryItem(input: JournalRecord): Item {
  return valueAttribute(input.value, {
    ...keyOf(journalKey(input, input.kind, input.name)),
    at: S(new Date(input.at).toISOString()),
    expiresAt: N(input.expiresAt),
    ...markAttributes(input.mark),
  });
}

const writeUnitsOf = (bytes: number) => Math.max(1, Math.ceil(bytes / ONE_WRITE_UNIT_BYTES));

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

  async get(input: JournalScope & { kind: JournalKind; name: string }) {
    const item = await this.read(journalKey(input, input.kind, input.name), 'journal entry');
    return item ? journalEntryOf(item) : undefined;
  }

  async load(scope: JournalScope): Promise<RecordedEntries> {
    const { pk } = journalKey(scope, 'step', '');
    const entries = new Map<string, JournalEntry>();
    let from: Item | undefined;
    do {
      try {
        const out = await this.client.send(
          new QueryCommand({
            TableName: this.tableName,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': S(pk) },
            ConsistentRead: true,
            ...(from ? { ExclusiveStartKey: from } : {}),
          }),
        );
        for (const item of out.Items ?? []) {
          const sk = item.sk?.S;
          if (sk !== undefined) entries.set(sk, journalEntryOf(item));
        }
        from = out.LastEvaluatedKey;
      } catch (error) {
        return translateAwsError(error, 'DynamoDB Query (journal)');
      }
    } while (from);
    return entries;
  }

  async record(input: JournalRecord): Promise<{ recorded: true } | { recorded: false; existing: JournalEntry }> {
    const item = journalEntryItem(input);
    const existing = await this.putOnce(item, 'journal entry');
    return existing ? { recorded: false, existing: journalEntryOf(existing) } : { recorded: true };
  }

  async signal(input: JournalScope & { name: string }) {
    const item = await this.read(inboxKey(input, input.name), 'signal');
    return item ? signalOf(item) : undefined;
  }

  async deliver(input: InboxDelivery): Promise<{ stored: true } | { stored: false; existing: InboxSignal }> {
    const item: Item = {
      ...keyOf(inboxKey(input, input.name)),
      payload: S(JSON.stringify(input.signal.payload ?? null)),
      payloadHash: S(input.signal.payloadHash),
      at: S(input.signal.at),
      expiresAt: N(input.expiresAt),
      // its due entry (byDue): the supervisor looks whether the job was woken
      ...(input.dueAt === undefined
        ? {}
        : { dueAt: N(input.dueAt), dueBucket: S(dueBucket(input.dueAt, input.jobId)) }),
    };
    const existing = await this.putOnce(item, 'signal');
    return existing ? { stored: false, existing: signalOf(existing) } : { stored: true };
  }

  private async read(key: ItemKey, what: string): Promise<Item | undefined> {
    try {
      const out = await this.client.send(
        new GetItemCommand({ TableName: this.tableName, Key: keyOf(key), ConsistentRead: true }),
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
