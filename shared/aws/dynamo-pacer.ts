/**
 * {@link Pacer} on the job table: one item per throttle or rate-limit key, `pace#<scope>#<key>`,
 * holding its GCRA theoretical arrival time `tat` (epoch ms). Every change is one conditional
 * UpdateItem, atomic on that item, so two workers can never take the same turn:
 * - quiet key (`tat` ≤ now, or no item): `SET tat = now + T`;
 * - busy key (`tat` > now): `SET tat = tat + T` (a throttle always; a rate limit only while
 *   `tat − τ ≤ now`).
 * The adapter remembers the last `tat` it saw per key, to try the right write first: one write
 * unit per job in the usual case, two when another worker changed the key's state in between
 * (a refused conditional write is billed too).
 *
 * Items expire through the table's TTL 30 days after their last write: by then the key is quiet
 * (a turn is never more than a month ahead) and an absent item means the same.
 */
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { Pace, Pacer } from '../core/pace';
import { ThrottledError } from '../errors';
import { keyOf, N } from './attributes';
import { translateAwsError } from './errors';

/** How long an idle key's item is kept. */
const PACE_RETENTION_SECONDS = 30 * 86_400;
/** Keys whose last `tat` is remembered (oldest forgotten first). */
const REMEMBERED_KEYS = 4096;

export const paceKey = (scope: string, key: string) => `pace#${scope}#${key}`;

type Write = { done: true; tat: number } | { done: false; tat: number | undefined };

export class DynamoPacer implements Pacer {
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  private remember(pk: string, tat: number | undefined): void {
    this.seen.delete(pk);
    if (tat === undefined) return;
    this.seen.set(pk, tat);
    if (this.seen.size > REMEMBERED_KEYS) {
      const oldest = this.seen.keys().next().value;
      if (oldest !== undefined) this.seen.delete(oldest);
    }
  }

  private async update(
    pk: string,
    now: number,
    expression: string,
    condition: string,
    values: Record<string, AttributeValue>,
  ): Promise<Write> {
    try {
      const out = await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: keyOf(pk),
          UpdateExpression: `${expression}, expiresAt = :exp`,
          ConditionExpression: condition,
          ExpressionAttributeValues: { ...values, ':exp': N(Math.floor(now / 1000) + PACE_RETENTION_SECONDS) },
          ReturnValues: 'UPDATED_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      const tat = Number(out.Attributes?.tat?.N);
      this.remember(pk, tat);
      return { done: true, tat };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        const old = error.Item?.tat?.N;
        const tat = old === undefined ? undefined : Number(old);
        this.remember(pk, tat);
        return { done: false, tat };
      }
      return translateAwsError(error, 'DynamoDB UpdateItem (pace)');
    }
  }

  /** The quiet-key write: `tat` = now + T, when the key is quiet. */
  private quiet(pk: string, now: number, pace: Pace): Promise<Write> {
    return this.update(pk, now, 'SET tat = :next', 'attribute_not_exists(tat) OR tat <= :now', {
      ':next': N(now + pace.intervalMs),
      ':now': N(now),
    });
  }

  /** The busy-key write: `tat` + T, when the key is busy (and, with `upTo`, `tat` ≤ upTo). */
  private busy(pk: string, now: number, pace: Pace, upTo?: number): Promise<Write> {
    return this.update(
      pk,
      now,
      'SET tat = tat + :t',
      upTo === undefined ? 'tat > :now' : 'tat > :now AND tat <= :upTo',
      { ':t': N(pace.intervalMs), ':now': N(now), ...(upTo === undefined ? {} : { ':upTo': N(upTo) }) },
    );
  }

  async takeTurn({ scope, key, now, pace }: { scope: string; key: string; now: number; pace: Pace }): Promise<number> {
    const pk = paceKey(scope, key);
    let busyFirst = (this.seen.get(pk) ?? 0) > now;
    // Each refused write tells the state it found; a key that changes between every two writes is
    // impossible for long (tat only grows, and an absent item is only created once).
    for (let i = 0; i < 4; i++) {
      if (busyFirst) {
        const w = await this.busy(pk, now, pace);
        if (w.done) return Math.max(now, w.tat - pace.intervalMs - pace.toleranceMs);
      } else {
        const w = await this.quiet(pk, now, pace);
        if (w.done) return now;
      }
      busyFirst = !busyFirst;
    }
    throw new ThrottledError(`the pace of ${scope}/${key} changed on every try; try again shortly`);
  }

  async tryStart({ scope, key, now, pace }: { scope: string; key: string; now: number; pace: Pace }): Promise<boolean> {
    const pk = paceKey(scope, key);
    let busyFirst = (this.seen.get(pk) ?? 0) > now;
    for (let i = 0; i < 4; i++) {
      const w = busyFirst ? await this.busy(pk, now, pace, now + pace.toleranceMs) : await this.quiet(pk, now, pace);
      if (w.done) return true;
      // busy and over the rate: the excess is dropped
      if (w.tat !== undefined && w.tat > now + pace.toleranceMs) return false;
      busyFirst = w.tat !== undefined && w.tat > now;
    }
    throw new ThrottledError(`the pace of ${scope}/${key} changed on every try; try again shortly`);
  }

  async state({ scope, key }: { scope: string; key: string }): Promise<number | undefined> {
    try {
      const out = await this.client.send(
        new GetItemCommand({ TableName: this.tableName, Key: keyOf(paceKey(scope, key)), ConsistentRead: true }),
      );
      const tat = out.Item?.tat?.N;
      return tat === undefined ? undefined : Number(tat);
    } catch (error) {
      return translateAwsError(error, 'DynamoDB GetItem (pace)');
    }
  }
}
