/**
 * What the flow slots' modules share: the slot item's key and codec, and the table calls with
 * their error translation. See shared/aws/dynamo-flow-slots.ts for the items and their costs.
 */
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { FairWaiting } from '../../core/fair-share';
import type { Holder, RuntimeLimit } from '../../core/flow';
import type { ItemKey } from '../../core/table';
import { keyOf, N } from '../attributes';
import { translateAwsError } from '../errors';

/** How long a ticket or line entry is kept: a job waits at most this long for its place to be remembered. */
export const TICKET_RETENTION_SECONDS = 30 * 86_400;

export const flowKeys = {
  slot: (scope: string, key: string) => `flow#${scope}#${key}`,
  ticket: (scope: string, ticket: number, key: string) => `flowt#${scope}#${ticket}#${key}`,
};

/**
 * The conditions that compare the holders with the limit: the one set at run time (`lim`, on the
 * slot item itself, so the check costs no read) when the item has one, the spec's (`:limit`)
 * otherwise. DynamoDB takes an attribute path as a comparison's operand, as it takes a value.
 */
export const UNDER_LIMIT =
  '((attribute_not_exists(lim) AND size(hs) < :limit) OR (attribute_exists(lim) AND size(hs) < lim))';
export const AT_LIMIT =
  '((attribute_not_exists(lim) AND size(hs) >= :limit) OR (attribute_exists(lim) AND size(hs) >= lim))';

/** A holder's entry in the slot item: since when, for which attempt, and its fair key (a slot shared fairly). */
export const holderEntry = (since: number, token: number, fair?: string, fairLine?: string): AttributeValue => ({
  M: {
    s: N(since),
    t: N(token),
    ...(fair === undefined ? {} : { f: { S: fair } }),
    ...(fairLine === undefined || fairLine === fair ? {} : { fl: { S: fairLine } }),
  },
});

/**
 * A slot shared fairly keeps, per fair key with jobs in line, two top-level attributes of its
 * item: `wf:<key>` (how many wait) and `ws:<key>` (since when the key waits for a place: its
 * first join, then its last admission). Top-level, so a join can count up with ADD on an item
 * that has none yet; removed when the key's last job is admitted. A weight set at run time for a
 * key is `fw:<key>`, read with the item by the admitter.
 */
export const fairAttrs = (key: string) => ({ count: `wf:${key}`, since: `ws:${key}`, weight: `fw:${key}` });

export interface SlotItem {
  holders: Holder[];
  /** The oldest-first line: tickets issued and admitted. */
  issued: number;
  admitted: number;
  /** The ranked line: entries waiting (`w`). */
  ranked: number;
  /** In a slot shared fairly: the fair keys with entries waiting (`wf:<key>`, `ws:<key>`). */
  fairWaiting: FairWaiting[];
  /** In a slot shared fairly: the weights set at run time, per fair key (`fw:<key>`). */
  fairWeights: Record<string, number>;
  /** The limit set at run time (`lim`, `limBy`, `limAt`), if any. */
  runtimeLimit?: RuntimeLimit;
}

export function slotItem(item: Record<string, AttributeValue> | undefined): SlotItem {
  const holders = Object.entries(item?.hs?.M ?? {}).map(([jobId, entry]) => ({
    jobId,
    since: Number(entry.M?.s?.N ?? '0'),
    token: Number(entry.M?.t?.N ?? '0'),
    ...(entry.M?.f?.S === undefined ? {} : { fair: entry.M.f.S }),
    ...(entry.M?.fl?.S === undefined ? {} : { fairLine: entry.M.fl.S }),
  }));
  const fairWaiting: FairWaiting[] = [];
  // keys are tenants' strings: no prototype to find `constructor` or `__proto__` in
  const fairWeights: Record<string, number> = Object.create(null);
  for (const [name, value] of Object.entries(item ?? {})) {
    if (name.startsWith('fw:')) fairWeights[name.slice(3)] = Number(value.N ?? '1');
    if (!name.startsWith('wf:')) continue;
    const key = name.slice(3);
    fairWaiting.push({ key, waiting: Number(value.N ?? '0'), since: Number(item?.[`ws:${key}`]?.N ?? '0') });
  }
  holders.sort((a, b) => (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0));
  return {
    holders,
    issued: Number(item?.iss?.N ?? '0'),
    admitted: Number(item?.adm?.N ?? '0'),
    ranked: Number(item?.w?.N ?? '0'),
    fairWaiting,
    fairWeights,
    ...(item?.lim?.N === undefined
      ? {}
      : { runtimeLimit: { limit: Number(item.lim.N), by: item.limBy?.S ?? '', at: Number(item.limAt?.N ?? '0') } }),
  };
}

/** The job table, as the flow slots' modules call it. */
export class SlotTable {
  constructor(
    readonly client: DynamoDBClient,
    readonly tableName: string,
  ) {}

  /** Runs a call; a condition that failed is `'refused'`, any other error is translated. */
  async send<T>(operation: string, run: () => Promise<T>): Promise<T | 'refused'> {
    try {
      return await run();
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return 'refused';
      return translateAwsError(error, `DynamoDB ${operation}`);
    }
  }

  /** One item, strongly consistent. */
  async read(pk: string | ItemKey): Promise<Record<string, AttributeValue> | undefined> {
    const out = await this.send('GetItem (flow)', () =>
      this.client.send(new GetItemCommand({ TableName: this.tableName, Key: keyOf(pk), ConsistentRead: true })),
    );
    return out === 'refused' ? undefined : out.Item;
  }
}

/**
 * Whether the place of `jobId` in the slot carries `me`, the mark of an admitter's write: the
 * write was applied, though its answer was refused (a retry after a lost answer) or lost. With
 * several jobs (the places one transaction set, all or none), whether any of them carries it:
 * a place no longer does once its job's attempt took it over, or gave it back.
 */
export async function placeMarked(
  table: SlotTable,
  slot: { scope: string; key: string },
  jobId: string | readonly string[],
  me: string,
): Promise<boolean> {
  const item = await table.read(flowKeys.slot(slot.scope, slot.key));
  const places = item?.hs?.M;
  if (!places) return false;
  // the job's own entry, not a member every object has (`constructor` is a valid job id)
  return (typeof jobId === 'string' ? [jobId] : jobId).some(
    (id) => Object.hasOwn(places, id) && places[id]?.M?.a?.S === me,
  );
}
