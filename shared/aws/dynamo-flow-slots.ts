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
 * it) and moved past it. Ticket items expire through the table's TTL (flow-slots/ticket-line.ts).
 *
 * Write units (items ≤ 1 KB; the slot item grows by a job id and a number per holder): a free
 * slot costs 1 (acquire) + 1 (release); a wait costs 2 more (ticket number, ticket item) and 1
 * for the admit that hands it the slot. The first job of a key value also creates its item (1).
 *
 * A limit set at run time (`lim`, with `limBy` and `limAt`) sits on the slot item itself: every
 * condition that compares the holders with the limit reads `lim` when it is there and the spec's
 * `:limit` otherwise, so it costs a job no read and no write.
 */
import { randomUUID } from 'node:crypto';
import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { fairLineOf } from '../core/fair-share';
import {
  type AcquireInput,
  type AcquireResult,
  type Admitted,
  effectiveLimit,
  type FlowSlots,
  type InLine,
  MAX_CONCURRENCY_LIMIT,
  type SetLimitInput,
  type SetWeightInput,
  type Slot,
  type SlotState,
} from '../core/flow';
import { rankTime } from '../core/priority';
import { ThrottledError } from '../errors';
import { keyOf, N, S } from './attributes';
import { translateAwsError } from './errors';
import { admitHeads } from './flow-slots/admit-many';
import { JOIN_CHUNK, joinable, joinChunk } from './flow-slots/join-many';
import { admitHead, entries, inLine, joinLine, nextInLine } from './flow-slots/ranked-line';
import {
  fairAttrs,
  flowKeys,
  holderEntry,
  type SlotItem,
  SlotTable,
  slotItem,
  UNDER_LIMIT,
} from './flow-slots/slot-table';
import { admitTicket, nextTicket, ticketAt, ticketJobs, writeTicket } from './flow-slots/ticket-line';

export { flowKeys, TICKET_RETENTION_SECONDS } from './flow-slots/slot-table';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The limit that holds, in a waiting answer, when one set at run time replaces the spec's. */
const limitOf = (slot: Slot, item: SlotItem) =>
  item.runtimeLimit ? { limit: effectiveLimit(slot, item.runtimeLimit) } : {};

/** A take's answer: taken (`fresh`: a place it did not hold), or refused with the slot item as it was (undefined: none yet). */
type Take = { taken: true; fresh: boolean } | { taken: false; old: SlotItem | undefined };

/** Tries of the acquire loop before it gives up (another writer changed the slot every time). */
const ACQUIRE_TRIES = 6;

export class DynamoFlowSlots implements FlowSlots {
  private readonly table: SlotTable;

  constructor(client: DynamoDBClient, tableName: string) {
    this.table = new SlotTable(client, tableName);
  }

  /** Creates the slot's item (no holder, no ticket) unless it exists. */
  private async create(slot: Slot): Promise<void> {
    const { table } = this;
    await table.send('PutItem (flow slot)', () =>
      table.client.send(
        new PutItemCommand({
          TableName: table.tableName,
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
  private async take(slot: Slot, jobId: string, now: number, token: number): Promise<Take> {
    const { table } = this;
    try {
      const out = await table.client.send(
        new UpdateItemCommand({
          TableName: table.tableName,
          Key: keyOf(flowKeys.slot(slot.scope, slot.key)),
          UpdateExpression: 'SET hs.#id = :entry',
          ConditionExpression:
            '(attribute_exists(hs.#id) AND hs.#id.t <= :t) OR ' +
            `(attribute_not_exists(hs.#id) AND ${UNDER_LIMIT} AND iss = adm AND (attribute_not_exists(w) OR w = :zero))`,
          ExpressionAttributeNames: { '#id': jobId },
          ExpressionAttributeValues: {
            ':entry': holderEntry(now, token, slot.fair?.key),
            ':t': N(token),
            ':limit': N(slot.limit),
            ':zero': N(0),
          },
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

  async acquire(input: AcquireInput): Promise<AcquireResult> {
    const { slot, jobId, token, rank, waitsAs } = input;
    // the first take's answer, when the waiter's look below made it
    let tried: Take | undefined;
    if (input.ticket !== undefined || waitsAs !== undefined) {
      // A job that waited, delivered: nearly always handed its place (a hand-on sends its
      // message), so its attempt takes the place over at once, with no read first. A refused take
      // answers with the slot as it was, which tells whether the job still waits (a failed
      // condition costs the write units of the slot item, where a read cost a read unit).
      tried = await this.take(slot, jobId, input.now, token);
      if (tried.taken) return { kind: 'held', fresh: tried.fresh };
      const now = tried.old;
      const mine = now?.holders.find((h) => h.jobId === jobId);
      // held for a newer attempt: this one will not start (its claim is refused)
      if (mine) return { kind: 'held', fresh: false };
      if (now && input.ticket !== undefined && input.ticket >= now.admitted && input.ticket < now.issued) {
        return {
          kind: 'waiting',
          ticket: input.ticket,
          first: input.ticket === now.admitted,
          holders: now.holders,
          ...limitOf(slot, now),
        };
      }
      if (now && waitsAs !== undefined && now.ranked > 0 && (await inLine(this.table, slot, waitsAs))) {
        const first = await this.firstInLine(slot, jobId, now);
        return { kind: 'waiting', rank: waitsAs, first, holders: now.holders, ...limitOf(slot, now) };
      }
    }
    for (let i = 0; i < ACQUIRE_TRIES; i++) {
      const taken = i === 0 && tried ? tried : await this.take(slot, jobId, input.now, token);
      if (taken.taken) return { kind: 'held', fresh: taken.fresh };
      const { old } = taken;
      if (!old) {
        await this.create(slot); // the key's first job
        continue;
      }
      // held for a newer attempt: this one will not start (its claim is refused)
      if (old.holders.some((h) => h.jobId === jobId)) return { kind: 'held', fresh: false };
      if (input.wait === false) return { kind: 'busy', holders: old.holders };
      if (rank !== undefined) {
        // past the cap of fair keys waiting, a new key joins the shared line
        const fairLine = slot.fair ? fairLineOf(slot.fair.key, old.fairWaiting) : undefined;
        const joined = await joinLine(this.table, slot, {
          jobId,
          type: input.type,
          rank,
          now: input.now,
          ...(fairLine === undefined ? {} : { fairLine }),
        });
        // otherwise a place came free, or the job was handed one, or another writer moved: look again
        if (joined.kind === 'conflict') await sleep(10 * (i + 1) + Math.random() * 20 * (i + 1));
        if (joined.kind !== 'waiting') continue;
        // first as the line stands after the join (it may have been emptied meanwhile): a head Query
        const first = await this.firstInLine(slot, jobId, old);
        return { kind: 'waiting', rank, first, holders: old.holders, ...limitOf(slot, old) };
      }
      const next = await nextTicket(this.table, slot, jobId);
      if (!next) continue; // a slot came free, or the job was handed one: take it
      if (!(await writeTicket(this.table, slot, next.ticket, { jobId, type: input.type, now: input.now }))) continue;
      return {
        kind: 'waiting',
        ticket: next.ticket,
        first: next.ticket === next.item.admitted,
        holders: next.item.holders,
        ...limitOf(slot, next.item),
      };
    }
    throw new ThrottledError(`the slot ${slot.scope}/${slot.key} changed on every try; try again shortly`);
  }

  /**
   * One `acquire` each, in order, for new jobs of one slot: while places may be free, one by one;
   * once one has to wait, the rest join the line {@link JOIN_CHUNK} at a time, one transaction
   * each (flow-slots/join-many.ts), and one by one again when the slot refuses that. Each answer
   * is told to `onAnswer` as it is settled.
   */
  async acquireMany(
    inputs: readonly AcquireInput[],
    onAnswer?: (index: number, answer: AcquireResult) => void,
  ): Promise<AcquireResult[]> {
    const out: AcquireResult[] = [];
    const answer = (got: AcquireResult) => {
      onAnswer?.(out.length, got);
      out.push(got);
    };
    let i = 0;
    while (i < inputs.length) {
      const got = await this.acquire(inputs[i] as AcquireInput);
      answer(got);
      i += 1;
      if (got.kind === 'waiting' && got.rank !== undefined) break;
    }
    while (i < inputs.length) {
      const chunk = inputs.slice(i, i + JOIN_CHUNK);
      i += chunk.length;
      const joined = joinable(chunk) ? await joinChunk(this.table, chunk) : undefined;
      if (!joined) {
        for (const input of chunk) answer(await this.acquire(input));
        continue;
      }
      const { item, first } = joined;
      for (const c of chunk) {
        answer({
          kind: 'waiting',
          rank: c.rank as string,
          first: c.jobId === first,
          holders: item.holders,
          ...limitOf(c.slot, item),
        });
      }
    }
    return out;
  }

  /**
   * Whether `jobId` is the next the slot serves: the ranked line's head (in a slot shared fairly,
   * the head of the key that would be picked, counting the job's own key as waiting), with no
   * ticket waiting.
   */
  private async firstInLine(slot: Slot, jobId: string, item: SlotItem): Promise<boolean> {
    if (item.issued > item.admitted) return false;
    const mine = slot.fair ? fairLineOf(slot.fair.key, item.fairWaiting) : undefined;
    if (mine !== undefined && !item.fairWaiting.some((w) => w.key === mine)) {
      item = { ...item, fairWaiting: [...item.fairWaiting, { key: mine, waiting: 1, since: Number.MAX_SAFE_INTEGER }] };
    }
    return (await nextInLine(this.table, slot, item))?.jobId === jobId;
  }

  /**
   * Removes the job's entry under its condition. A try of the SDK's whose answer was lost may have
   * removed it: a retry is then refused, finding no entry. A refusal after more than one try that
   * finds no entry for the job counts as given back: its place is free either way (another writer
   * that freed it meanwhile logs its own line), and the caller hands it on and says it ended.
   */
  async release(input: { slot: Slot; jobId: string; token?: number }): Promise<boolean> {
    const { table } = this;
    try {
      await table.client.send(
        new UpdateItemCommand({
          TableName: table.tableName,
          Key: keyOf(flowKeys.slot(input.slot.scope, input.slot.key)),
          UpdateExpression: 'REMOVE hs.#id',
          ConditionExpression: input.token === undefined ? 'attribute_exists(hs.#id)' : 'hs.#id.t = :t',
          ExpressionAttributeNames: { '#id': input.jobId },
          ...(input.token === undefined ? {} : { ExpressionAttributeValues: { ':t': N(input.token) } }),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        const tries = error.$metadata.attempts ?? 1;
        // the job's own entry, not a member every object has (`constructor` is a valid job id)
        const holds = error.Item?.hs?.M !== undefined && Object.hasOwn(error.Item.hs.M, input.jobId);
        return tries > 1 && !holds;
      }
      return translateAwsError(error, 'DynamoDB UpdateItem (flow release)');
    }
  }

  async admit(input: {
    slot: Slot;
    now: number;
    onAdmitted?: (admitted: Admitted) => Promise<void>;
  }): Promise<Admitted[]> {
    const { slot } = input;
    const admitted: Admitted[] = [];
    // Marks the entries this call writes, to tell its own write (applied, answer lost) from another admitter's.
    const me = randomUUID();
    // several places free at once go to the ranked line's next jobs in one round, until a round is refused
    let together = true;
    const handed = async (round: Admitted[]) => {
      admitted.push(...round);
      await Promise.all(round.map((one) => input.onAdmitted?.(one)));
    };
    for (let guard = 0; guard < MAX_CONCURRENCY_LIMIT + 64; guard++) {
      const item = slotItem(await this.table.read(flowKeys.slot(slot.scope, slot.key)));
      const free = effectiveLimit(slot, item.runtimeLimit) - item.holders.length;
      if (free <= 0) break;
      const tickets = item.admitted < item.issued;
      if (!tickets && item.ranked === 0) break;
      let round: Admitted[] | undefined;
      if (!tickets && together && free > 1 && item.ranked > 1) {
        round = await admitHeads(this.table, { slot, item, places: free, now: input.now, me });
        // refused, or nothing it could hand on together (a count with no entry to serve): one at a time
        if (!round?.length) {
          together = false;
          continue;
        }
      } else if (tickets && (item.ranked === 0 || (await this.ticketFirst(slot, item)))) {
        const one = await admitTicket(this.table, { slot, item, now: input.now, me });
        round = one ? [one] : undefined;
      } else {
        const one = await admitHead(this.table, { slot, item, now: input.now, me });
        if (one === 'empty') break;
        round = one ? [one] : undefined;
      }
      if (!round) continue;
      await handed(round);
      // Every place free as read is handed on: a place freed since has its own admission to come
      // (its give-back's, or a look's), which reads what this one wrote. Not so when the line as
      // read is handed on with places left: a job that joined since (between the read and the
      // write) saw the slot as it was before its join, full maybe, and its look hands nothing on;
      // only a read after its join sees both it and the place left. That read is the next turn.
      // A place counts only when it was taken: a second ticket or entry of a job that held one
      // as read (a duplicate delivery's) is used up with no place, which stays to be handed on.
      const held = new Set(item.holders.map((h) => h.jobId));
      const taken = new Set(round.map((a) => a.jobId).filter((jobId) => !held.has(jobId)));
      if (taken.size >= free) break;
    }
    return admitted;
  }

  /**
   * A slot with both lines (a singleton scope shared by a type with priorities and one without,
   * or a type that took priorities on while tickets waited) serves the older first: the oldest
   * ticket, by when it was written, or the ranked line's head, by the time its rank stands for.
   * A ticket not written yet goes first (its admission waits for it, or skips it).
   */
  private async ticketFirst(slot: Slot, item: SlotItem): Promise<boolean> {
    // the entry that would be served (in a slot shared fairly, the picked key's head)
    const [at, first] = await Promise.all([
      ticketAt(this.table, slot, item.admitted),
      nextInLine(this.table, slot, item),
    ]);
    return at === undefined || first === undefined || at <= rankTime(first.rank);
  }

  async state(slot: Pick<Slot, 'scope' | 'key'>): Promise<SlotState> {
    const item = slotItem(await this.table.read(flowKeys.slot(slot.scope, slot.key)));
    return {
      holders: item.holders,
      waiting: Math.max(0, item.issued - item.admitted) + item.ranked,
      issued: item.issued,
      admitted: item.admitted,
      ...(item.fairWaiting.length > 0
        ? { waitingByFairKey: Object.fromEntries(item.fairWaiting.map((w) => [w.key, w.waiting])) }
        : {}),
      ...(Object.keys(item.fairWeights).length > 0 ? { fairWeights: item.fairWeights } : {}),
      ...(item.runtimeLimit ? { runtimeLimit: item.runtimeLimit } : {}),
    };
  }

  /**
   * Sets `lim` (with `limBy`, `limAt`) on the slot item, creating the item as {@link create} does
   * when the key has none: one UpdateItem. Removing it is one UpdateItem conditioned on the item
   * (an update of a missing item would create a bare one).
   */
  async setLimit(input: SetLimitInput): Promise<void> {
    const { table } = this;
    const Key = keyOf(flowKeys.slot(input.slot.scope, input.slot.key));
    await table.send('UpdateItem (flow limit)', () =>
      table.client.send(
        new UpdateItemCommand(
          input.limit === undefined
            ? {
                TableName: table.tableName,
                Key,
                UpdateExpression: 'REMOVE lim, limBy, limAt',
                ConditionExpression: 'attribute_exists(pk)',
              }
            : {
                TableName: table.tableName,
                Key,
                UpdateExpression:
                  'SET lim = :lim, limBy = :by, limAt = :at, hs = if_not_exists(hs, :none), ' +
                  'iss = if_not_exists(iss, :zero), adm = if_not_exists(adm, :zero)',
                ExpressionAttributeValues: {
                  ':lim': N(input.limit),
                  ':by': S(input.by),
                  ':at': N(input.now),
                  ':none': { M: {} },
                  ':zero': N(0),
                },
              },
        ),
      ),
    );
  }

  /**
   * Sets `fw:<fair key>` on the slot item (creating the item as {@link create} does), or removes
   * it (conditioned on the item): one UpdateItem. The item grows by about 10 bytes and the key's
   * length per weight set, and every write to it costs 1 write unit per KB.
   */
  async setWeight(input: SetWeightInput): Promise<void> {
    const { table } = this;
    const Key = keyOf(flowKeys.slot(input.slot.scope, input.slot.key));
    const names = { '#fw': fairAttrs(input.fairKey).weight };
    await table.send('UpdateItem (flow weight)', () =>
      table.client.send(
        new UpdateItemCommand(
          input.weight === undefined
            ? {
                TableName: table.tableName,
                Key,
                UpdateExpression: 'REMOVE #fw',
                ConditionExpression: 'attribute_exists(pk)',
                ExpressionAttributeNames: names,
              }
            : {
                TableName: table.tableName,
                Key,
                UpdateExpression:
                  'SET #fw = :w, hs = if_not_exists(hs, :none), iss = if_not_exists(iss, :zero), adm = if_not_exists(adm, :zero)',
                ExpressionAttributeNames: names,
                ExpressionAttributeValues: { ':w': N(input.weight), ':none': { M: {} }, ':zero': N(0) },
              },
        ),
      ),
    );
  }

  /** A read of the slot item, a read per ticket listed, and a Query (0.5 read unit per 4 KB) for the ranked line. */
  async line(input: { slot: Pick<Slot, 'scope' | 'key' | 'fair'>; max: number }): Promise<InLine[]> {
    const slot = { ...input.slot, limit: 0 };
    const item = slotItem(await this.table.read(flowKeys.slot(slot.scope, slot.key)));
    const tickets = await ticketJobs(this.table, slot, item.admitted, Math.min(item.issued, item.admitted + input.max));
    const ranked = item.ranked > 0 ? await entries(this.table, slot, input.max - tickets.length, slot.fair?.key) : [];
    return [
      ...tickets,
      ...ranked.map((e) => ({
        jobId: e.jobId,
        type: e.type,
        rank: e.rank,
        ...(e.fair === undefined ? {} : { fair: e.fair }),
      })),
    ];
  }
}
