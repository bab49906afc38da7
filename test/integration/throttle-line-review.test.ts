/**
 * Failing cases of a throttle's line on DynamoDB Local (DynamoPacer, shared/aws/pace-line.ts),
 * that the in-memory fake cannot show: the pace item's expiry, and a request held while others
 * run (an SDK middleware waits on a gate before sending it, as in flow-ranked-line-races.test.ts).
 * Each test states the invariant it breaks; they fail until the code is fixed.
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { keyOf } from '../../shared/aws/attributes';
import { DynamoPacer, paceKey } from '../../shared/aws/dynamo-pacer';
import { type LineTurn, type Pacer, throttlePace } from '../../shared/core/pace';
import { rankKey } from '../../shared/core/priority';
import { useJobTable } from '../local-aws/job-table';
import { type CallInfo, FaultInjector, type FaultPhase } from '../support/faults';
import { holdingTransaction, localDynamoClient } from '../support/held-requests';

const { dynamo, tableName } = useJobTable('throttle-line-review');
const NOW = Date.parse('2026-06-01T00:00:00.000Z');
const DAY = 86_400_000;
const pace = throttlePace({ limit: 1, periodSeconds: 1 }); // T = 1 s, no burst
const run = Math.random().toString(36).slice(2, 8);
let seq = 0;
const scope = () => `review-${run}-${++seq}~t`;
const job = (rank: number, id: string) => ({ jobId: id, type: 't', rank: rankKey(rank, id) });
const ask = (p: Pacer, s: string, now: number, j: ReturnType<typeof job>, inLine = false) =>
  p.lineTurn({ scope: s, key: 'k', now, pace, job: j, inLine });

/** The pace item's attributes (consistent read). */
async function paceItem(s: string) {
  const out = await dynamo.send(
    new GetItemCommand({ TableName: tableName, Key: keyOf(paceKey(s, 'k')), ConsistentRead: true }),
  );
  return out.Item;
}

/**
 * A client whose takeHead transaction for the entry `rank` fails on every SDK attempt, so that
 * the error reaches the line's code: with `after`, each attempt is applied (the first one; the
 * SDK's retries send the same ClientRequestToken, and DynamoDB answers them as the first) and
 * its answer lost; with `before`, none is sent.
 */
function failingTakeOf(rank: string, phase: FaultPhase) {
  const client = localDynamoClient();
  const faults = new FaultInjector();
  faults.install(client, 'dynamodb');
  const items = (call: CallInfo) =>
    (call.input.TransactItems ?? []) as { Update?: unknown; Delete?: { Key?: { sk?: { S?: string } } } }[];
  faults.script({
    match: (call) =>
      call.command === 'TransactWriteItems' &&
      items(call)[0]?.Update !== undefined &&
      items(call)[1]?.Delete?.Key?.sk?.S === rank,
    kind: 'server',
    phase,
    times: Number.POSITIVE_INFINITY,
  });
  return { client, faults };
}

/** A client whose takeHead transaction for the entry `rank` (the pace item's update, then the entry's delete) waits until `open()`. */
const holdingTakeOf = (rank: string) =>
  holdingTransaction((items) => items[0]?.Update !== undefined && items[1]?.Delete?.Key?.sk?.S === rank);

describe('throttle line review on DynamoDB Local', () => {
  it('keeps the count of jobs in line: the pace item does not expire while jobs wait, and expires again once none do', async () => {
    const s = scope();
    const p = new DynamoPacer(dynamo, tableName);
    expect(await ask(p, s, NOW, job(NOW, 'first'))).toEqual({ kind: 'go' });
    expect(Number((await paceItem(s))?.expiresAt?.N)).toBe(Math.floor(NOW / 1000) + 30 * 86_400);
    // two jobs wait in line, then are cancelled: their entries stay until a job finds them first
    const gone = [job(NOW - 100_000, 'gone1'), job(NOW - 90_000, 'gone2')];
    for (const [i, g] of gone.entries()) expect(await ask(p, s, NOW + 1 + i, g)).toMatchObject({ joined: true });
    // the pace item counts them, and has no expiry: the table's TTL can never take the count
    // away from entries that stay (it was: the count reset to 0 under two entries, and a
    // newcomer took the turn as if the line were empty, passing a better-ranked job)
    const item = await paceItem(s);
    expect(item?.w?.N).toBe('2');
    expect(item?.expiresAt).toBeUndefined();
    // a month later, a high-priority job joins (no turn free... one is: the line is not empty)
    const later = NOW + 31 * DAY;
    const high = job(later - 300_000, 'high');
    expect(await ask(p, s, later, high)).toMatchObject({ kind: 'wait', joined: true });
    // a newcomer asks, and takes out each head that will not come, as the gate does
    const low = job(later + 1000, 'low');
    let turn: LineTurn = await ask(p, s, later + 1000, low);
    for (let i = 0; i < 5 && turn.kind === 'wait' && turn.head?.jobId.startsWith('gone'); i++) {
      await p.leaveLine({ scope: s, key: 'k', rank: turn.head.rank });
      turn = await ask(p, s, later + 1000, low, true);
    }
    // the free turn goes to high, first in line, not to low
    expect(turn).toMatchObject({ kind: 'wait', head: { jobId: 'high' } });
    expect(await ask(p, s, later + 1001, high, true)).toEqual({
      kind: 'go',
      next: expect.objectContaining({ jobId: 'low' }),
    });
    expect((await paceItem(s))?.w?.N).toBe('1');
    expect((await paceItem(s))?.expiresAt).toBeUndefined();
    // the last job takes its turn: nobody waits, and the item expires again
    const last = later + 1001 + 1000;
    expect(await ask(p, s, last, low, true)).toEqual({ kind: 'go' });
    expect((await paceItem(s))?.w?.N).toBe('0');
    expect(Number((await paceItem(s))?.expiresAt?.N)).toBe(Math.floor(last / 1000) + 30 * 86_400);
  });

  it('refuses the head’s take when a better-ranked job joined after the head was read, even if another entry left meanwhile', async () => {
    const s = scope();
    const p = new DynamoPacer(dynamo, tableName);
    expect(await ask(p, s, NOW, job(NOW, 'first'))).toEqual({ kind: 'go' });
    const me = job(NOW, 'me');
    const stale = job(NOW + 500, 'stale'); // behind me; its job has ended
    expect(await ask(p, s, NOW + 1, stale)).toMatchObject({ joined: true });
    expect(await ask(p, s, NOW + 2, me)).toMatchObject({ joined: true });
    // a turn is free: I read the line (w = 2), find myself first, and my take is held
    const held = holdingTakeOf(me.rank);
    const mine = ask(new DynamoPacer(held.client, tableName), s, NOW + 1000, me, true);
    await held.reached;
    // meanwhile a better-ranked job joins (w = 3) and is told I am first, and a worker that
    // found `stale` first earlier (before I joined) takes it out (w = 2 again)
    const best = job(NOW - 60_000, 'best');
    expect(await ask(p, s, NOW + 1000, best)).toMatchObject({ kind: 'wait', joined: true });
    expect(await p.leaveLine({ scope: s, key: 'k', rank: stale.rank })).toBe(true);
    expect((await p.line({ scope: s, key: 'k', max: 10 })).map((e) => e.jobId)).toEqual(['best', 'me']);
    held.open();
    const got = await mine;
    held.client.destroy();
    // Invariant: the take is refused when a job joined after the head was read (pace-line.ts:
    // "a job that joined after the head was read (perhaps ahead of it) refuses the take").
    // Broken: the take is conditioned on `w` as read, and a join plus a leave bring `w` back to
    // it (ABA): I take the turn while best, ranked ahead, is in line
    expect(got).not.toEqual({ kind: 'go' });
  });

  /** A turn just taken by `first`, then `high` and `low` (ranked behind it) in line. */
  async function highAndLowInLine() {
    const s = scope();
    const p = new DynamoPacer(dynamo, tableName);
    expect(await ask(p, s, NOW, job(NOW, 'first'))).toEqual({ kind: 'go' });
    const high = job(NOW - 60_000, 'high');
    const low = job(NOW, 'low');
    expect(await ask(p, s, NOW + 1, high)).toMatchObject({ kind: 'wait', joined: true });
    expect(await ask(p, s, NOW + 2, low)).toMatchObject({ kind: 'wait', joined: true });
    return { s, p, high, low };
  }

  it('starts the head whose take was applied though its answer was lost on every try, instead of leaving it out of line with its turn spent', async () => {
    const { s, p, high } = await highAndLowInLine();
    // a turn is free at NOW + 1 s: high, first in line, takes it; DynamoDB applies the take, and
    // every answer to it is lost (the error escapes the SDK's retries)
    const failing = failingTakeOf(high.rank, 'after');
    const got = await ask(new DynamoPacer(failing.client, tableName), s, NOW + 1000, high, true).catch(
      (error: unknown) => error,
    );
    failing.client.destroy();
    expect(failing.faults.events.length).toBeGreaterThan(1);
    // the take was applied: high left the line and the turn is spent
    expect((await p.line({ scope: s, key: 'k', max: 10 })).map((e) => e.jobId)).toEqual(['low']);
    // Invariant: a job that took a turn starts at it (and names the one after it). Broken: the
    // error reaches the worker, which does not start high; its entry is gone, so the next free
    // turn goes to low, ranked behind it, and high joins again behind the line's turn it lost
    // (the full chaos run: flo-01179 took a turn while flo-01197, ranked ahead, had waited 15 s)
    expect(got).toEqual({ kind: 'go', next: expect.objectContaining({ jobId: 'low' }) });
  });

  it('does not start the head whose take failed unapplied, when meanwhile its entry was taken out and another took the turn', async () => {
    const { s, p, high, low } = await highAndLowInLine();
    // high's take never reaches DynamoDB, and while its error is on its way, a worker that found
    // high first (its clock behind, so high looked not due) takes its entry out, and low, first
    // now, takes the free turn: the entry is gone and the TAT moved, as after high's own take
    const client = localDynamoClient();
    let sideDone = false;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const items = (args.input as { TransactItems?: { Delete?: { Key?: { sk?: { S?: string } } } }[] })
          .TransactItems;
        if (context.commandName === 'TransactWriteItemsCommand' && items?.[1]?.Delete?.Key?.sk?.S === high.rank) {
          if (!sideDone) {
            sideDone = true;
            expect(await p.leaveLine({ scope: s, key: 'k', rank: high.rank })).toBe(true);
            expect(await ask(p, s, NOW + 1000, low, true)).toEqual({ kind: 'go' });
          }
          throw Object.assign(new Error('connect ECONNREFUSED (injected, before)'), { $retryable: undefined });
        }
        return next(args);
      },
      { step: 'initialize', name: 'failTakeAfterOthers' },
    );
    const got = await ask(new DynamoPacer(client, tableName), s, NOW + 1000, high, true).catch(
      (error: unknown) => error,
    );
    client.destroy();
    expect(sideDone).toBe(true);
    // Invariant: one free turn starts one job (GCRA: T = 1 s, no burst). Broken: high's failed
    // take was taken for applied (its entry gone, the TAT moved), so high and low both started
    // on the one turn (the full chaos run: the flo-t throttle line's turns over the GCRA bound by
    // about one turn)
    expect(got).not.toEqual(expect.objectContaining({ kind: 'go' }));
  });

  it('keeps in line the head whose take failed without being applied', async () => {
    const { s, p, high, low } = await highAndLowInLine();
    // high's take never reaches DynamoDB: the error is the worker's, and high is still first
    const failing = failingTakeOf(high.rank, 'before');
    await expect(ask(new DynamoPacer(failing.client, tableName), s, NOW + 1000, high, true)).rejects.toThrow();
    failing.client.destroy();
    expect((await p.line({ scope: s, key: 'k', max: 10 })).map((e) => e.jobId)).toEqual(['high', 'low']);
    // the turn is still free, and goes to high when its message comes back
    expect(await ask(p, s, NOW + 1500, low, true)).toMatchObject({ kind: 'wait' });
    expect(await ask(p, s, NOW + 1500, high, true)).toEqual({
      kind: 'go',
      next: expect.objectContaining({ jobId: 'low' }),
    });
  });
});
