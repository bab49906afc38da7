/**
 * {@link FlowSlots} on the job table. One item per slot (limit and key value) and one small item
 * per ticket; every change is one conditional UpdateItem or PutItem on one item, so two workers
 * can never both take the last slot.
 *
 * Slot item `flow#<scope>#<key>`:
 * - `hs`: map of the jobs holding a slot to `{ s: since, t: attempt token }` (setting or removing
 *   one entry is idempotent, so a retried write changes nothing);
 * - `iss`: tickets issued; `adm`: tickets admitted. Tickets `adm … iss-1` wait, in order.
 *
 * Ticket item `flowt#<scope>#<n>#<key>`: the waiting job (`jobId`, `type`), or `skipped` when
 * the admitter found no job behind the ticket (its job died between taking the ticket and writing
 * it) and moved past it. Ticket items expire through the table's TTL.
 *
 * Write units (items ≤ 1 KB; the slot item grows by a job id and a number per holder): a free
 * slot costs 1 (acquire) + 1 (release); a wait costs 2 more (ticket number, ticket item) and 1
 * for the admit that hands it the slot. The first job of a key value also creates its item (1).
 */
import { randomUUID } from 'node:crypto';
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { AcquireInput, AcquireResult, Admitted, FlowSlots, Holder, Slot, SlotState } from '../core/flow';
import { ThrottledError } from '../errors';
import { keyOf, N, S } from './attributes';
import { translateAwsError } from './errors';

/** Tries of the acquire loop before it gives up (another writer changed the slot every time). */
const ACQUIRE_TRIES = 6;
/** How long a ticket item is kept: a job waits at most this long for its place to be remembered. */
export const TICKET_RETENTION_SECONDS = 30 * 86_400;
/** Pauses before an admitter skips a ticket whose item is not written yet (its job may be writing it). */
const MISSING_TICKET_WAITS_MS = [20, 100, 400];

const entry = (since: number, token: number): AttributeValue => ({ M: { s: N(since), t: N(token) } });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const flowKeys = {
  slot: (scope: string, key: string) => `flow#${scope}#${key}`,
  ticket: (scope: string, ticket: number, key: string) => `flowt#${scope}#${ticket}#${key}`,
};

interface SlotItem {
  holders: Holder[];
  issued: number;
  admitted: number;
}

function slotItem(item: Record<string, AttributeValue> | undefined): SlotItem {
  const holders = Object.entries(item?.hs?.M ?? {}).map(([jobId, entry]) => ({
    jobId,
    since: Number(entry.M?.s?.N ?? '0'),
    token: Number(entry.M?.t?.N ?? '0'),
  }));
  holders.sort((a, b) => (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0));
  return { holders, issued: Number(item?.iss?.N ?? '0'), admitted: Number(item?.adm?.N ?? '0') };
}

export class DynamoFlowSlots implements FlowSlots {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  private async send<T>(operation: string, run: () => Promise<T>): Promise<T | 'refused'> {
    try {
      return await run();
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return 'refused';
      return translateAwsError(error, `DynamoDB ${operation}`);
    }
  }

  /** Creates the slot's item (no holder, no ticket) unless it exists. */
  private async create(slot: Slot): Promise<void> {
    await this.send('PutItem (flow slot)', () =>
      this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: { ...keyOf(flowKeys.slot(slot.scope, slot.key)), hs: { M: {} }, iss: N(0), adm: N(0) },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
  }

  /**
   * Takes a free slot when no ticket waits, or moves the job's entry to attempt `token`; the old
   * item (undefined: no item yet) when refused.
   */
  private async take(
    slot: Slot,
    jobId: string,
    now: number,
    token: number,
  ): Promise<{ taken: true; fresh: boolean } | { taken: false; old: SlotItem | undefined }> {
    try {
      const out = await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: keyOf(flowKeys.slot(slot.scope, slot.key)),
          UpdateExpression: 'SET hs.#id = :entry',
          ConditionExpression:
            '(attribute_exists(hs.#id) AND hs.#id.t <= :t) OR (attribute_not_exists(hs.#id) AND size(hs) < :limit AND iss = adm)',
          ExpressionAttributeNames: { '#id': jobId },
          ExpressionAttributeValues: { ':entry': entry(now, token), ':t': N(token), ':limit': N(slot.limit) },
          ReturnValues: 'UPDATED_OLD',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { taken: true, fresh: out.Attributes?.hs === undefined };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        return { taken: false, old: error.Item ? slotItem(error.Item) : undefined };
      }
      return translateAwsError(error, 'DynamoDB UpdateItem (flow acquire)');
    }
  }

  /** Takes the next ticket, only while the job really has to wait; undefined when it need not. */
  private async nextTicket(slot: Slot, jobId: string): Promise<{ ticket: number; item: SlotItem } | undefined> {
    const out = await this.send('UpdateItem (flow ticket)', () =>
      this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: keyOf(flowKeys.slot(slot.scope, slot.key)),
          UpdateExpression: 'SET iss = iss + :one',
          ConditionExpression: 'attribute_not_exists(hs.#id) AND (size(hs) >= :limit OR iss > adm)',
          ExpressionAttributeNames: { '#id': jobId },
          ExpressionAttributeValues: { ':one': N(1), ':limit': N(slot.limit) },
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    if (out === 'refused') return undefined;
    const item = slotItem(out.Attributes);
    return { ticket: item.issued - 1, item };
  }

  /** Writes the ticket item; false when an admitter marked the ticket skipped first. */
  private async writeTicket(slot: Slot, ticket: number, jobId: string, type: string, now: number): Promise<boolean> {
    const out = await this.send('PutItem (flow ticket)', () =>
      this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: {
            ...keyOf(flowKeys.ticket(slot.scope, ticket, slot.key)),
            jobId: S(jobId),
            type: S(type),
            at: N(now),
            expiresAt: N(Math.floor(now / 1000) + TICKET_RETENTION_SECONDS),
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
    return out !== 'refused';
  }

  async acquire(input: AcquireInput): Promise<AcquireResult> {
    const { slot, jobId, token } = input;
    if (input.ticket !== undefined) {
      // A job that waited: a read tells whether it still waits, with no write.
      const now = slotItem(await this.read(flowKeys.slot(slot.scope, slot.key)));
      const mine = now.holders.find((h) => h.jobId === jobId);
      if (mine && mine.token >= token) return { kind: 'held', fresh: false };
      if (!mine && input.ticket >= now.admitted && input.ticket < now.issued) {
        return { kind: 'waiting', ticket: input.ticket, first: input.ticket === now.admitted, holders: now.holders };
      }
    }
    for (let i = 0; i < ACQUIRE_TRIES; i++) {
      const taken = await this.take(slot, jobId, input.now, token);
      if (taken.taken) return { kind: 'held', fresh: taken.fresh };
      const { old } = taken;
      if (!old) {
        await this.create(slot); // the key's first job
        continue;
      }
      // held for a newer attempt: this one will not start (its claim is refused)
      if (old.holders.some((h) => h.jobId === jobId)) return { kind: 'held', fresh: false };
      if (input.wait === false) return { kind: 'busy', holders: old.holders };
      const next = await this.nextTicket(slot, jobId);
      if (!next) continue; // a slot came free, or the job was handed one: take it
      if (!(await this.writeTicket(slot, next.ticket, jobId, input.type, input.now))) continue;
      return {
        kind: 'waiting',
        ticket: next.ticket,
        first: next.ticket === next.item.admitted,
        holders: next.item.holders,
      };
    }
    throw new ThrottledError(`the slot ${slot.scope}/${slot.key} changed on every try; try again shortly`);
  }

  async release(input: { slot: Slot; jobId: string; token?: number }): Promise<boolean> {
    const out = await this.send('UpdateItem (flow release)', () =>
      this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: keyOf(flowKeys.slot(input.slot.scope, input.slot.key)),
          UpdateExpression: 'REMOVE hs.#id',
          ConditionExpression: input.token === undefined ? 'attribute_exists(hs.#id)' : 'hs.#id.t = :t',
          ExpressionAttributeNames: { '#id': input.jobId },
          ...(input.token === undefined ? {} : { ExpressionAttributeValues: { ':t': N(input.token) } }),
        }),
      ),
    );
    return out !== 'refused';
  }

  private async read(pk: string): Promise<Record<string, AttributeValue> | undefined> {
    const out = await this.send('GetItem (flow)', () =>
      this.client.send(new GetItemCommand({ TableName: this.tableName, Key: keyOf(pk), ConsistentRead: true })),
    );
    return out === 'refused' ? undefined : out.Item;
  }

  /** The job behind ticket `n`: waits a little for a ticket item still being written, then marks it skipped. */
  private async ticketHolder(slot: Slot, n: number, now: number): Promise<{ jobId: string; type: string } | 'skipped'> {
    const pk = flowKeys.ticket(slot.scope, n, slot.key);
    for (const waitMs of [0, ...MISSING_TICKET_WAITS_MS]) {
      if (waitMs > 0) await sleep(waitMs);
      const item = await this.read(pk);
      if (item?.skipped) return 'skipped';
      if (item?.jobId?.S && item.type?.S) return { jobId: item.jobId.S, type: item.type.S };
    }
    const marked = await this.send('PutItem (flow skip)', () =>
      this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: {
            ...keyOf(pk),
            skipped: { BOOL: true },
            expiresAt: N(Math.floor(now / 1000) + TICKET_RETENTION_SECONDS),
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
    // written meanwhile by its job: read it again
    return marked === 'refused' ? this.ticketHolder(slot, n, now) : 'skipped';
  }

  async admit(input: { slot: Slot; now: number }): Promise<Admitted[]> {
    const { slot } = input;
    const admitted: Admitted[] = [];
    const slotKey = keyOf(flowKeys.slot(slot.scope, slot.key));
    // Marks the entries this call writes, to tell its own write (applied, answer lost) from another admitter's.
    const me = randomUUID();
    for (let guard = 0; guard < slot.limit + 64; guard++) {
      const item = slotItem(await this.read(flowKeys.slot(slot.scope, slot.key)));
      if (item.admitted >= item.issued || item.holders.length >= slot.limit) break;
      const n = item.admitted;
      const holder = await this.ticketHolder(slot, n, input.now);
      const out = await this.send('UpdateItem (flow admit)', () =>
        this.client.send(
          new UpdateItemCommand({
            TableName: this.tableName,
            Key: slotKey,
            ...(holder === 'skipped'
              ? {
                  UpdateExpression: 'SET adm = adm + :one',
                  ConditionExpression: 'adm = :n',
                  ExpressionAttributeValues: { ':one': N(1), ':n': N(n) },
                }
              : {
                  // handed the slot with token 0: its attempt takes it over when its message comes
                  UpdateExpression: 'SET hs.#id = if_not_exists(hs.#id, :entry), adm = adm + :one',
                  ConditionExpression: 'adm = :n AND (size(hs) < :limit OR attribute_exists(hs.#id))',
                  ExpressionAttributeNames: { '#id': holder.jobId },
                  ExpressionAttributeValues: {
                    ':one': N(1),
                    ':n': N(n),
                    ':entry': { M: { s: N(input.now), t: N(0), a: S(me) } },
                    ':limit': N(slot.limit),
                  },
                }),
          }),
        ),
      );
      if (holder === 'skipped') continue;
      if (out !== 'refused') {
        admitted.push({ ...holder, ticket: n });
        continue;
      }
      // Refused: another admitter moved first, the slot filled, or our own write was applied and
      // its answer lost (the SDK's retry is refused). Ours when the entry carries our mark: then
      // the job is named, so it is sent its message (a lost wake would leave the slot held by a job
      // that never starts). Then look again.
      const after = await this.read(flowKeys.slot(slot.scope, slot.key));
      if (after?.hs?.M?.[holder.jobId]?.M?.a?.S === me) admitted.push({ ...holder, ticket: n });
    }
    return admitted;
  }

  async state(slot: Pick<Slot, 'scope' | 'key'>): Promise<SlotState> {
    const item = slotItem(await this.read(flowKeys.slot(slot.scope, slot.key)));
    return {
      holders: item.holders,
      waiting: Math.max(0, item.issued - item.admitted),
      issued: item.issued,
      admitted: item.admitted,
    };
  }
}
