/**
 * The oldest-first line of a slot: numbered tickets. The slot item counts them (`iss` issued,
 * `adm` admitted), so tickets `adm … iss-1` wait, in order; ticket item `flowt#<scope>#<n>#<key>`
 * names the job behind ticket n (`jobId`, `type`), or says `skipped` when the admitter found no
 * job behind it (its job died between taking the ticket and writing it) and moved past it.
 *
 * Write units (items ≤ 1 KB): a wait costs 2 (ticket number, ticket item), and 1 for the admit
 * that hands the job its place.
 */
import { PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { Admitted, Slot } from '../../core/flow';
import { keyOf, N, S } from '../attributes';
import {
  AT_LIMIT,
  flowKeys,
  placeMarked,
  type SlotItem,
  type SlotTable,
  slotItem,
  TICKET_RETENTION_SECONDS,
  UNDER_LIMIT,
} from './slot-table';

/** Pauses before an admitter skips a ticket whose item is not written yet (its job may be writing it). */
const MISSING_TICKET_WAITS_MS = [20, 100, 400];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Takes the next ticket, only while the job really has to wait; undefined when it need not. */
export async function nextTicket(
  table: SlotTable,
  slot: Slot,
  jobId: string,
): Promise<{ ticket: number; item: SlotItem } | undefined> {
  const out = await table.send('UpdateItem (flow ticket)', () =>
    table.client.send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: keyOf(flowKeys.slot(slot.scope, slot.key)),
        UpdateExpression: 'SET iss = iss + :one',
        ConditionExpression: `attribute_not_exists(hs.#id) AND (${AT_LIMIT} OR iss > adm OR w > :zero)`,
        ExpressionAttributeNames: { '#id': jobId },
        ExpressionAttributeValues: { ':one': N(1), ':zero': N(0), ':limit': N(slot.limit) },
        ReturnValues: 'ALL_NEW',
      }),
    ),
  );
  if (out === 'refused') return undefined;
  const item = slotItem(out.Attributes);
  return { ticket: item.issued - 1, item };
}

/** Writes the ticket item; false when an admitter marked the ticket skipped first. */
export async function writeTicket(
  table: SlotTable,
  slot: Slot,
  ticket: number,
  job: { jobId: string; type: string; now: number },
): Promise<boolean> {
  const out = await table.send('PutItem (flow ticket)', () =>
    table.client.send(
      new PutItemCommand({
        TableName: table.tableName,
        Item: {
          ...keyOf(flowKeys.ticket(slot.scope, ticket, slot.key)),
          jobId: S(job.jobId),
          type: S(job.type),
          at: N(job.now),
          expiresAt: N(Math.floor(job.now / 1000) + TICKET_RETENTION_SECONDS),
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    ),
  );
  return out !== 'refused';
}

/** When ticket `n`'s job wrote it (epoch ms); undefined while it is not written, or skipped. */
export async function ticketAt(table: SlotTable, slot: Slot, n: number): Promise<number | undefined> {
  const item = await table.read(flowKeys.ticket(slot.scope, n, slot.key));
  return item?.at?.N !== undefined && !item.skipped ? Number(item.at.N) : undefined;
}

/** The jobs behind tickets `from` … `to - 1` that are written and not skipped, in order: a read each. */
export async function ticketJobs(
  table: SlotTable,
  slot: Slot,
  from: number,
  to: number,
): Promise<{ jobId: string; type: string; ticket: number }[]> {
  const numbers = Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);
  const items = await Promise.all(numbers.map((n) => table.read(flowKeys.ticket(slot.scope, n, slot.key))));
  return items.flatMap((item, i) =>
    item?.jobId?.S && item.type?.S && !item.skipped
      ? [{ jobId: item.jobId.S, type: item.type.S, ticket: from + i }]
      : [],
  );
}

/** The job behind ticket `n`: waits a little for a ticket item still being written, then marks it skipped. */
async function ticketHolder(
  table: SlotTable,
  slot: Slot,
  n: number,
  now: number,
): Promise<{ jobId: string; type: string } | 'skipped'> {
  const pk = flowKeys.ticket(slot.scope, n, slot.key);
  for (const waitMs of [0, ...MISSING_TICKET_WAITS_MS]) {
    if (waitMs > 0) await sleep(waitMs);
    const item = await table.read(pk);
    if (item?.skipped) return 'skipped';
    if (item?.jobId?.S && item.type?.S) return { jobId: item.jobId.S, type: item.type.S };
  }
  const marked = await table.send('PutItem (flow skip)', () =>
    table.client.send(
      new PutItemCommand({
        TableName: table.tableName,
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
  return marked === 'refused' ? ticketHolder(table, slot, n, now) : 'skipped';
}

/**
 * Hands a free place to the oldest ticket (`item.admitted`), or moves past it when no job is
 * behind it. The job admitted, if any; `me` marks the entries this admitter writes, to tell its
 * own write (applied, answer lost) from another admitter's.
 */
export async function admitTicket(
  table: SlotTable,
  input: { slot: Slot; item: SlotItem; now: number; me: string },
): Promise<Admitted | undefined> {
  const { slot, now, me } = input;
  const n = input.item.admitted;
  const holder = await ticketHolder(table, slot, n, now);
  const write = () =>
    table.send('UpdateItem (flow admit)', () =>
      table.client.send(
        new UpdateItemCommand({
          TableName: table.tableName,
          Key: keyOf(flowKeys.slot(slot.scope, slot.key)),
          ...(holder === 'skipped'
            ? {
                UpdateExpression: 'SET adm = adm + :one',
                ConditionExpression: 'adm = :n',
                ExpressionAttributeValues: { ':one': N(1), ':n': N(n) },
              }
            : {
                // handed the slot with token 0: its attempt takes it over when its message comes
                UpdateExpression: 'SET hs.#id = if_not_exists(hs.#id, :entry), adm = adm + :one',
                ConditionExpression: `adm = :n AND (${UNDER_LIMIT} OR attribute_exists(hs.#id))`,
                ExpressionAttributeNames: { '#id': holder.jobId },
                ExpressionAttributeValues: {
                  ':one': N(1),
                  ':n': N(n),
                  ':entry': { M: { s: N(now), t: N(0), a: S(me) } },
                  ':limit': N(slot.limit),
                },
              }),
        }),
      ),
    );
  if (holder === 'skipped') {
    await write();
    return undefined;
  }
  let out: Awaited<ReturnType<typeof write>>;
  try {
    out = await write();
  } catch (error) {
    // failed outright (its answer lost on every try): applied all the same when our mark is there
    if (await placeMarked(table, slot, holder.jobId, me).catch(() => false)) return { ...holder, ticket: n };
    throw error;
  }
  if (out !== 'refused') return { ...holder, ticket: n };
  // Refused: another admitter moved first, the slot filled, or our own write was applied and
  // its answer lost (the SDK's retry is refused). Ours when the entry carries our mark: then
  // the job is named, so it is sent its message (a lost wake would leave the slot held by a job
  // that never starts).
  return (await placeMarked(table, slot, holder.jobId, me)) ? { ...holder, ticket: n } : undefined;
}
