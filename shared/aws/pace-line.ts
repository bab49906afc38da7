/**
 * A throttle's line, for a type with priorities (the adapter side of {@link Pacer.lineTurn}):
 * a turn goes to the best-ranked job waiting, not to the one that asked first.
 *
 * Items:
 * - the key's pace item (`pace#<scope>#<key>`, see dynamo-pacer.ts) counts the jobs in line,
 *   `w`, beside its TAT;
 * - each waiting job has an entry `flowq#<scope>#<key>` / `<rank key>` (`jobId`, `type`, `at`): one
 *   item collection sorted by rank, whose head is one Query. It is a concurrency slot's ranked
 *   line (shared/aws/flow-slots/ranked-line.ts), read and written with its calls and covered by
 *   the same grants; only its count lives on the pace item instead of a slot item.
 *
 * A job asks with one consistent read of the pace item:
 * - the line empty and a turn free: it takes the turn, conditioned on the TAT, the pace's version
 *   and the line's version `lv` as read (1 write unit, as a plain throttle's turn);
 * - no turn free: it joins (its entry put, `w` and `lv` counted up, one transaction: 4 write
 *   units) and comes back about when its turn would be, were every job ahead to take one (the
 *   next turn when none is ahead: one more Query of one entry);
 * - a turn free and jobs in line: the head of the line (one consistent Query of the first two)
 *   takes it, with one transaction (the TAT moved, the take's mark `lt` set, `w` counted down
 *   and `lv` up, conditioned as above, and its entry deleted: 4 write units), and names the job after it, which its caller
 *   sends its message: the line moves on by itself, one message's latency per turn at most.
 *   Anyone else waits on, behind the line; when the turn has been free for a while (the hand-on
 *   was lost, or the head joined after it) it names the head, for its caller to send it its
 *   message (its own may be hidden until later).
 *
 * Conditioning the take on the line's version as read makes the order exact: a job that joined
 * after the head was read (perhaps ahead of it) refuses the take, even if another left meanwhile,
 * and the head is read again. A hand-off in flight is the head's message on its way, not a turn
 * given away: no turn is taken in advance, so every start is at a turn that was free when it was
 * taken. The pace item keeps no expiry while jobs wait in line (its count would go with it).
 */

import { randomUUID } from 'node:crypto';
import type { AttributeValue, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import {
  type LineTurn,
  lineEstimate,
  nextTurn,
  type Pace,
  type PaceLineEntry,
  turnFree,
  turnOverdue,
} from '../core/pace';
import { itemKey } from '../core/table';
import { ThrottledError } from '../errors';
import { keyOf, N, S } from './attributes';
import { inLine, type LineEntry, linePk, queryLine, transact } from './flow-slots/ranked-line';
import type { SlotTable } from './flow-slots/slot-table';

/** How many times a job reads the line again after another writer moved first. */
const TRIES = 8;

/** The pace item as the line reads it. */
export interface PaceItemRead {
  tat: number | undefined;
  /** Jobs in line. */
  waiting: number;
  /** The line's version: counted up by every join, leave and take (0: none yet). */
  lv: number;
  /** The run-time pace's version (0: none). */
  pv: number;
  /** The pace that holds (the run-time one, else the caller's). */
  pace: Pace;
  /** Whether the item keeps no expiry (a run-time pace is set). */
  kept: boolean;
  /** The mark of the last head's take (`lt`): which take moved the TAT last. */
  taker?: string;
}

/** A throttle key's line: its entries are a ranked line's (`flowq#<scope>#<key>`), counted on the pace item. */
export interface PaceLine {
  table: SlotTable;
  /** The throttle's pace scope and key: the line's partition, as a slot's ranked line's. */
  slot: { scope: string; key: string };
  /** The pace item's key. */
  pacePk: string;
}

interface LineDeps extends PaceLine {
  /** Reads the pace item (consistent), with the pace that holds. */
  read(): Promise<PaceItemRead>;
  /** The expiry an idle key's item gets (epoch s). */
  expiresAt(now: number): number;
}

/**
 * The conditions of a write on the pace item as read: the pace's version, the TAT, and the line's
 * version (not its count: a join and a leave between the read and the write leave the count as
 * it was, and the line changed).
 */
function asRead(read: PaceItemRead, values: Record<string, AttributeValue>): string {
  const parts = [
    read.pv > 0 ? 'pv = :pv' : 'attribute_not_exists(pv)',
    read.tat === undefined ? 'attribute_not_exists(tat)' : 'tat = :seenTat',
    read.lv > 0 ? 'lv = :seenLv' : 'attribute_not_exists(lv)',
  ];
  if (read.pv > 0) values[':pv'] = N(read.pv);
  if (read.tat !== undefined) values[':seenTat'] = N(read.tat);
  if (read.lv > 0) values[':seenLv'] = N(read.lv);
  return parts.join(' AND ');
}

/**
 * How a write that leaves `waitingAfter` jobs in line treats the item's expiry: set (nobody
 * waits, the key may go quiet) or removed (an item with jobs in line never expires: its count
 * would go with it while their entries stay). A run-time pace keeps it from expiring anyway.
 */
function expiry(
  read: PaceItemRead,
  waitingAfter: number,
  now: number,
  deps: LineDeps,
  values: Record<string, AttributeValue>,
) {
  if (read.kept) return { set: '', remove: '' };
  if (waitingAfter > 0) return { set: '', remove: ' REMOVE expiresAt' };
  values[':exp'] = N(deps.expiresAt(now));
  return { set: ', expiresAt = :exp', remove: '' };
}

const paceEntry = (e: LineEntry): PaceLineEntry => ({
  jobId: e.jobId,
  type: e.type,
  rank: e.rank,
  ...(e.joinedAt === undefined ? {} : { joinedAt: e.joinedAt }),
});

/** The first `max` entries of the line (consistent when asked). */
export async function lineEntries(line: PaceLine, max: number, consistent: boolean): Promise<PaceLineEntry[]> {
  return (await queryLine(line.table, line.slot, { max, consistent, fairKey: undefined })).map(paceEntry);
}

/** Whether any job waits ahead of `rank` (an eventually consistent Query of one entry: an estimate's input). */
async function anyAhead(deps: LineDeps, rank: string): Promise<boolean> {
  const out = await deps.table.send('Query (pace line)', () =>
    deps.table.client.send(
      new QueryCommand({
        TableName: deps.table.tableName,
        KeyConditionExpression: 'pk = :pk AND sk < :rank',
        ExpressionAttributeValues: { ':pk': S(linePk(deps.slot)), ':rank': S(rank) },
        ProjectionExpression: 'pk',
        Limit: 1,
      }),
    ),
  );
  return out !== 'refused' && (out.Items ?? []).length > 0;
}

/** Takes a turn with the line empty: the TAT moved, on the item as read. False: it moved first. */
async function takeEmpty(deps: LineDeps, read: PaceItemRead, now: number): Promise<boolean> {
  const values: Record<string, AttributeValue> = { ':next': N(nextTurn(read.tat, now, read.pace).tat) };
  const condition = asRead(read, values);
  const exp = expiry(read, 0, now, deps, values);
  const out = await deps.table.send('UpdateItem (pace line)', () =>
    deps.table.client.send(
      new UpdateItemCommand({
        TableName: deps.table.tableName,
        Key: keyOf(deps.pacePk),
        UpdateExpression: `SET tat = :next${exp.set}`,
        ConditionExpression: condition,
        ExpressionAttributeValues: values,
      }),
    ),
  );
  return out !== 'refused';
}

/** Joins the line: its entry put and the count up. `joined`, `there` (it was in line), or `conflict`. */
async function join(deps: LineDeps, job: PaceLineEntry, now: number): Promise<'joined' | 'there' | 'conflict'> {
  const items: TransactWriteItem[] = [
    {
      Put: {
        TableName: deps.table.tableName,
        Item: {
          ...keyOf(itemKey(linePk(deps.slot), job.rank)),
          jobId: S(job.jobId),
          type: S(job.type),
          at: N(now),
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
    {
      Update: {
        TableName: deps.table.tableName,
        Key: keyOf(deps.pacePk),
        // an item with jobs in line does not expire (see expiry)
        UpdateExpression: 'ADD w :one, lv :one REMOVE expiresAt',
        ExpressionAttributeValues: { ':one': N(1) },
      },
    },
  ];
  const out = await transact(deps.table, items, 'pace line join');
  if (out === 'ok') return 'joined';
  return out[0] === 'ConditionalCheckFailed' ? 'there' : 'conflict';
}

/**
 * The head takes the free turn: the TAT moved and the count down (on the item as read), and its
 * entry deleted. `taken`, `gone` (its entry is not in line), or `conflict` (the item moved).
 */
async function takeHead(
  deps: LineDeps,
  read: PaceItemRead,
  rank: string,
  now: number,
): Promise<'taken' | 'gone' | 'conflict'> {
  // the take's own mark on the pace item: the only proof, when every answer is lost, that this
  // take (and not another after the entry was taken out) moved the TAT
  const mark = randomUUID();
  const values: Record<string, AttributeValue> = {
    ':next': N(nextTurn(read.tat, now, read.pace).tat),
    ':minus': N(-1),
    ':one': N(1),
    ':mark': S(mark),
  };
  const condition = asRead(read, values);
  const exp = expiry(read, read.waiting - 1, now, deps, values);
  const items: TransactWriteItem[] = [
    {
      Update: {
        TableName: deps.table.tableName,
        Key: keyOf(deps.pacePk),
        UpdateExpression: `SET tat = :next, lt = :mark${exp.set} ADD w :minus, lv :one${exp.remove}`,
        ConditionExpression: condition,
        ExpressionAttributeValues: values,
      },
    },
    {
      Delete: {
        TableName: deps.table.tableName,
        Key: keyOf(itemKey(linePk(deps.slot), rank)),
        ConditionExpression: 'attribute_exists(pk)',
      },
    },
  ];
  let out: 'ok' | string[];
  try {
    out = await transact(deps.table, items, 'pace line turn');
  } catch (error) {
    // failed outright (its answer lost on every try): applied all the same when the pace item
    // carries its mark. The job starts at the turn it took: out of line with the turn spent, it
    // would see the next one go to a job ranked behind it
    if (await tookHead(deps, mark).catch(() => false)) return 'taken';
    throw error;
  }
  if (out === 'ok') return 'taken';
  if (out[1] === 'ConditionalCheckFailed' && out[0] !== 'ConditionalCheckFailed') return 'gone';
  return 'conflict';
}

/**
 * Whether the take marked `mark`, whose every answer was lost, was applied: the pace item carries
 * its mark. Not "the entry is gone and the TAT moved": the entry of a job whose clock looked not
 * due to another worker may be taken out while its take fails, and the next job take the turn;
 * both would start on one turn. A take applied and then followed by another before this read
 * reads as not applied: the job joins again and waits for a later turn (a turn spent, never one
 * given twice).
 */
async function tookHead(deps: LineDeps, mark: string): Promise<boolean> {
  return (await deps.read()).taker === mark;
}

/** See {@link Pacer.lineTurn}. */
export async function lineTurn(
  deps: LineDeps,
  input: { now: number; job: PaceLineEntry; inLine: boolean },
): Promise<LineTurn> {
  const { now, job } = input;
  let believed = input.inLine;
  let joined = false;
  for (let i = 0; i < TRIES; i++) {
    const read = await deps.read();
    const free = turnFree(read.tat, now, read.pace);
    if (free && read.waiting === 0) {
      if (await takeEmpty(deps, read, now)) return { kind: 'go' };
      continue;
    }
    if (!free) {
      if (believed) return { kind: 'wait', until: lineEstimate(read.tat, now, read.pace, 0), joined };
      const out = await join(deps, job, now);
      if (out === 'conflict') continue;
      believed = true;
      joined ||= out === 'joined';
      // the jobs counted before it are ahead of it, at most; none, and it is first: the next turn
      const ahead = read.waiting > 0 && (await anyAhead(deps, job.rank)) ? read.waiting : 0;
      return { kind: 'wait', until: lineEstimate(read.tat, now, read.pace, ahead), joined };
    }
    // a turn is free, and jobs wait: it goes to the head
    const [head, next] = await lineEntries(deps, 2, true);
    if (head?.rank === job.rank) {
      const taken = await takeHead(deps, read, job.rank, now);
      if (taken === 'taken') return next ? { kind: 'go', next } : { kind: 'go' };
      if (taken === 'gone') believed = false;
      continue;
    }
    if (!believed || !(await inLine(deps.table, deps.slot, job.rank))) {
      const out = await join(deps, job, now);
      if (out === 'conflict') continue;
      joined ||= out === 'joined';
      believed = true;
    }
    // passed: it comes back behind every job now in line (the one after the head is sent its
    // message when the head takes its turn)
    const until = lineEstimate(read.tat, now, read.pace, read.waiting);
    // no head: the count and the entries disagree only between a read and a write; read again
    if (!head) continue;
    // the job that took the last turn sent the head its message: only a turn free for a while
    // says that it was lost
    if (!turnOverdue(read.tat, now, read.pace)) return { kind: 'wait', until, joined };
    return { kind: 'wait', until, joined, head };
  }
  throw new ThrottledError('the throttle line changed on every try; try again shortly');
}

/** See {@link Pacer.leaveLine}: the entry deleted and the count down, in one transaction. */
export async function leaveLine(line: PaceLine, rank: string): Promise<boolean> {
  const out = await transact(
    line.table,
    [
      {
        Delete: {
          TableName: line.table.tableName,
          Key: keyOf(itemKey(linePk(line.slot), rank)),
          ConditionExpression: 'attribute_exists(pk)',
        },
      },
      {
        Update: {
          TableName: line.table.tableName,
          Key: keyOf(line.pacePk),
          // (the item keeps no expiry: a join removed it, and the next take from an empty line sets it)
          UpdateExpression: 'ADD w :minus, lv :one',
          ConditionExpression: 'w > :zero',
          ExpressionAttributeValues: { ':minus': N(-1), ':zero': N(0), ':one': N(1) },
        },
      },
    ],
    'pace line leave',
  );
  if (out === 'ok') return true;
  if (out[0] === 'ConditionalCheckFailed') return false;
  throw new ThrottledError('the throttle line changed while a job left it; try again shortly');
}
