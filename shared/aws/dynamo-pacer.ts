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
 *
 * A pace set at run time (`PUT /types/{type}/keys/{key}/limits`) sits on the same item: its GCRA
 * parameters `pT` and `pTau` (with `pL`, `pP`, `pB`, `pBy`, `pAt` for the views) and a version
 * `pv`, counted up by every change. Every write is conditioned on the version the adapter last
 * saw (none: `attribute_not_exists(pv)`), so a change refuses the next write of every worker
 * once; the refusal brings the item back (`ALL_OLD`), with the new parameters, and the write is
 * made again with them. So a change holds from the next start, and a job pays no read for it:
 * a worker that has never seen the key pays one refused write (1 write unit) for a key with a
 * version. An item with a run-time pace does not expire (its writes leave `expiresAt` out).
 */
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { type LineTurn, type Pace, type PaceLineEntry, type Pacer, type RuntimePace, rescaleTat } from '../core/pace';
import { ThrottledError } from '../errors';
import { keyOf, N, S } from './attributes';
import { translateAwsError } from './errors';
import { SlotTable } from './flow-slots/slot-table';
import { leaveLine, lineEntries, lineTurn, type PaceItemRead, type PaceLine } from './pace-line';

/** How long an idle key's item is kept. */
const PACE_RETENTION_SECONDS = 30 * 86_400;
/** Keys whose last `tat` is remembered (oldest forgotten first). */
const REMEMBERED_KEYS = 4096;

export const paceKey = (scope: string, key: string) => `pace#${scope}#${key}`;

/** What a turn or a rate's count is asked with. */
type PaceCall = { scope: string; key: string; now: number; pace: Pace };

type Write = { done: true; tat: number } | { done: false; tat: number | undefined };

/** What the adapter last saw of a key's run-time pace: its version, and its parameters if set. */
interface Known {
  pv: number;
  pace?: Pace;
}

/** The run-time pace on an item, if any. */
function runtimeOf(item: Record<string, AttributeValue> | undefined): RuntimePace | undefined {
  if (item?.pT?.N === undefined || item.pTau?.N === undefined) return undefined;
  return {
    limit: Number(item.pL?.N ?? '0'),
    periodSeconds: Number(item.pP?.N ?? '0'),
    ...(item.pB?.N === undefined ? {} : { burst: Number(item.pB.N) }),
    pace: { intervalMs: Number(item.pT.N), toleranceMs: Number(item.pTau.N) },
    by: item.pBy?.S ?? '',
    at: Number(item.pAt?.N ?? '0'),
  };
}

export class DynamoPacer implements Pacer {
  private readonly seen = new Map<string, number>();
  private readonly known = new Map<string, Known>();

  /** The version and run-time pace the item carries (none: version 0). */
  private learn(pk: string, item: Record<string, AttributeValue> | undefined): void {
    const pv = Number(item?.pv?.N ?? '0');
    const runtime = runtimeOf(item);
    this.known.set(pk, { pv, ...(runtime ? { pace: runtime.pace } : {}) });
    if (this.known.size > REMEMBERED_KEYS) {
      const oldest = this.known.keys().next().value;
      if (oldest !== undefined) this.known.delete(oldest);
    }
  }

  /** The pace that holds for the key as last seen: the run-time one, else the caller's. */
  private paceOf(pk: string, spec: Pace): Pace {
    return this.known.get(pk)?.pace ?? spec;
  }

  /** The table as a ranked line's calls see it (a throttle's line is one: pace-line.ts). */
  private readonly lines: SlotTable;

  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {
    this.lines = new SlotTable(client, tableName);
  }

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
    const known = this.known.get(pk);
    const version = known && known.pv > 0 ? 'pv = :pv' : 'attribute_not_exists(pv)';
    // an item with a run-time pace keeps it: no expiry
    const expires = known?.pace === undefined;
    try {
      const out = await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: keyOf(pk),
          UpdateExpression: expires ? `${expression}, expiresAt = :exp` : expression,
          ConditionExpression: `(${condition}) AND ${version}`,
          ExpressionAttributeValues: {
            ...values,
            ...(expires ? { ':exp': N(Math.floor(now / 1000) + PACE_RETENTION_SECONDS) } : {}),
            ...(known && known.pv > 0 ? { ':pv': N(known.pv) } : {}),
          },
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
        this.learn(pk, error.Item);
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

  async takeTurn({ scope, key, now, pace: spec }: PaceCall): Promise<number> {
    const pk = paceKey(scope, key);
    let busyFirst = (this.seen.get(pk) ?? 0) > now;
    // Each refused write tells the state it found (and the pace that holds); a key that changes
    // between every two writes is impossible for long (tat only grows, an absent item is only
    // created once, and a run-time pace changes only by an operator's call).
    for (let i = 0; i < 5; i++) {
      const pace = this.paceOf(pk, spec);
      const w = busyFirst ? await this.busy(pk, now, pace) : await this.quiet(pk, now, pace);
      if (w.done) return busyFirst ? Math.max(now, w.tat - pace.intervalMs - pace.toleranceMs) : now;
      busyFirst = w.tat !== undefined && w.tat > now;
    }
    throw new ThrottledError(`the pace of ${scope}/${key} changed on every try; try again shortly`);
  }

  async tryStart({ scope, key, now, pace: spec }: PaceCall): Promise<boolean> {
    const pk = paceKey(scope, key);
    let busyFirst = (this.seen.get(pk) ?? 0) > now;
    for (let i = 0; i < 5; i++) {
      const before = this.known.get(pk)?.pv;
      const pace = this.paceOf(pk, spec);
      const w = busyFirst ? await this.busy(pk, now, pace, now + pace.toleranceMs) : await this.quiet(pk, now, pace);
      if (w.done) return true;
      // busy and over the rate (as it holds now): the excess is dropped
      const holds = this.paceOf(pk, spec);
      if (this.known.get(pk)?.pv === before && w.tat !== undefined && w.tat > now + holds.toleranceMs) return false;
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

  /**
   * A read, then one UpdateItem conditioned on what it read (the version, and the TAT it carries
   * over, see {@link rescaleTat}), tried again if another writer moved in between: sets the
   * parameters and counts the version up (creating the item, with no expiry), or removes them
   * (counting the version up; the item expires again as usual).
   */
  async setPace(input: {
    scope: string;
    key: string;
    runtime: RuntimePace | undefined;
    spec: Pace;
    now: number;
  }): Promise<void> {
    const pk = paceKey(input.scope, input.key);
    const { runtime, now } = input;
    for (let i = 0; i < 5; i++) {
      const item = await this.read(pk);
      if (!item && !runtime) return; // removing one from a key with no item creates none
      const from = runtimeOf(item)?.pace ?? input.spec;
      const to = runtime?.pace ?? input.spec;
      const old = item?.tat?.N === undefined ? undefined : Number(item.tat.N);
      const tat = rescaleTat(old, now, from, to);
      const values: Record<string, AttributeValue> = { ':one': N(1) };
      const sets = ['pv = if_not_exists(pv, :zero) + :one'];
      values[':zero'] = N(0);
      const removes: string[] = [];
      if (tat !== undefined && tat !== old) {
        sets.push('tat = :tat');
        values[':tat'] = N(tat);
      }
      if (runtime) {
        sets.push('pT = :t', 'pTau = :tau', 'pL = :l', 'pP = :p', 'pBy = :by', 'pAt = :at');
        Object.assign(values, {
          ':t': N(runtime.pace.intervalMs),
          ':tau': N(runtime.pace.toleranceMs),
          ':l': N(runtime.limit),
          ':p': N(runtime.periodSeconds),
          ':by': S(runtime.by),
          ':at': N(runtime.at),
        });
        if (runtime.burst === undefined) removes.push('pB');
        else {
          sets.push('pB = :b');
          values[':b'] = N(runtime.burst);
        }
        removes.push('expiresAt');
      } else {
        // an item with jobs in its throttle's line does not expire (shared/aws/pace-line.ts)
        if (Number(item?.w?.N ?? '0') > 0) removes.push('expiresAt');
        else {
          sets.push('expiresAt = :exp');
          values[':exp'] = N(Math.floor(now / 1000) + PACE_RETENTION_SECONDS);
        }
        removes.push('pT', 'pTau', 'pL', 'pP', 'pB', 'pBy', 'pAt');
      }
      const pv = item?.pv?.N;
      const lv = item?.lv?.N;
      const seen = [
        pv === undefined ? 'attribute_not_exists(pv)' : 'pv = :pv',
        old === undefined ? 'attribute_not_exists(tat)' : 'tat = :old',
        // the expiry above follows the throttle line's count as read
        lv === undefined ? 'attribute_not_exists(lv)' : 'lv = :lv',
      ].join(' AND ');
      if (pv !== undefined) values[':pv'] = N(Number(pv));
      if (lv !== undefined) values[':lv'] = N(Number(lv));
      if (old !== undefined) values[':old'] = N(old);
      try {
        await this.client.send(
          new UpdateItemCommand({
            TableName: this.tableName,
            Key: keyOf(pk),
            UpdateExpression: `SET ${sets.join(', ')} REMOVE ${removes.join(', ')}`,
            ConditionExpression: seen,
            ExpressionAttributeValues: values,
          }),
        );
        this.known.delete(pk);
        this.seen.delete(pk);
        return;
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) {
          return translateAwsError(error, 'DynamoDB UpdateItem (pace set)');
        }
      }
    }
    throw new ThrottledError(`the pace of ${input.scope}/${input.key} changed on every try; try again shortly`);
  }

  private async read(pk: string): Promise<Record<string, AttributeValue> | undefined> {
    try {
      const out = await this.client.send(
        new GetItemCommand({ TableName: this.tableName, Key: keyOf(pk), ConsistentRead: true }),
      );
      return out.Item;
    } catch (error) {
      return translateAwsError(error, 'DynamoDB GetItem (pace)');
    }
  }

  async runtimePace({ scope, key }: { scope: string; key: string }): Promise<RuntimePace | undefined> {
    return runtimeOf(await this.read(paceKey(scope, key)));
  }

  /** A key's throttle line (pace-line.ts): its entries, and its pace item. */
  private lineOf(scope: string, key: string): PaceLine {
    return { table: this.lines, slot: { scope, key }, pacePk: paceKey(scope, key) };
  }

  /**
   * A turn from the key's line (a type with priorities): a consistent read of the pace item,
   * then one conditional write (see pace-line.ts for the items and their write units).
   */
  async lineTurn(input: PaceCall & { job: PaceLineEntry; inLine: boolean }): Promise<LineTurn> {
    const line = this.lineOf(input.scope, input.key);
    this.seen.delete(line.pacePk);
    return lineTurn(
      {
        ...line,
        read: async (): Promise<PaceItemRead> => {
          const item = await this.read(line.pacePk);
          this.learn(line.pacePk, item);
          const runtime = runtimeOf(item);
          return {
            tat: item?.tat?.N === undefined ? undefined : Number(item.tat.N),
            waiting: Number(item?.w?.N ?? '0'),
            lv: Number(item?.lv?.N ?? '0'),
            pv: Number(item?.pv?.N ?? '0'),
            pace: runtime?.pace ?? input.pace,
            kept: runtime !== undefined,
            ...(item?.lt?.S === undefined ? {} : { taker: item.lt.S }),
          };
        },
        expiresAt: (now: number) => Math.floor(now / 1000) + PACE_RETENTION_SECONDS,
      },
      input,
    );
  }

  async leaveLine({ scope, key, rank }: { scope: string; key: string; rank: string }): Promise<boolean> {
    return leaveLine(this.lineOf(scope, key), rank);
  }

  async line({ scope, key, max }: { scope: string; key: string; max: number }): Promise<PaceLineEntry[]> {
    return lineEntries(this.lineOf(scope, key), max, false);
  }
}
