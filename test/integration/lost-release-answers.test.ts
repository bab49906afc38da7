/**
 * A place given back whose answer is lost, on DynamoDB Local through the real SDK: the release
 * (`REMOVE hs.<job>`) reaches the table, its answer is lost, and the SDK's retry is refused by its
 * condition (the entry is gone). The writer cannot tell its own release from another's, so it must
 * act on what is now true (the job holds no place), not on the answer: hand the place on, and say
 * the place ended in a line that names the holder.
 */
import { describe, expect, it } from 'vitest';
import { DynamoFlowSlots } from '../../shared/aws/dynamo-flow-slots';
import { DynamoJobStore } from '../../shared/aws/dynamo-job-store';
import type { Slot } from '../../shared/core/flow';
import { createLineKeeper } from '../../shared/dispatch/line-keeper';
import { createLogger } from '../../shared/logger';
import { createFlowGate } from '../../shared/runtime/flow-gate';
import { useJobTable } from '../local-aws/job-table';
import { newJob } from '../support/fakes';
import { FaultInjector } from '../support/faults';

const { dynamo, tableName } = useJobTable('lost-release');
const faults = new FaultInjector();
faults.install(dynamo, 'dynamodb');
const NOW = Date.parse('2026-06-01T00:00:00.000Z');
const clock = { now: () => NOW + 5_000 };
let n = 0;

/** A slot of its own, with `a` holding its one place for attempt 1 and `a` already succeeded. */
async function heldByFinishedJob(slots: DynamoFlowSlots, store: DynamoJobStore, token: number) {
  n += 1;
  const slot: Slot = { scope: `lost-${n}-${Date.now()}#0`, key: 'k', limit: 1 };
  const a = `a-${n}`;
  await store.create(newJob({ id: a, type: 'echo', state: 'succeeded', finishedAt: new Date(NOW).toISOString() }));
  await slots.acquire({ slot, jobId: a, type: 'echo', now: NOW, token });
  return { slot, a };
}

/** The release of `jobId`'s place reaches the table and its answer is lost: the SDK's retry is refused. */
function loseReleaseAnswer(jobId: string) {
  faults.script({
    match: (c) =>
      c.command === 'UpdateItem' &&
      String(c.input.UpdateExpression) === 'REMOVE hs.#id' &&
      (c.input.ExpressionAttributeNames as Record<string, string>)['#id'] === jobId,
    kind: 'server',
    phase: 'after',
  });
}

function capture() {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({ level: 'info', sink: (l) => lines.push(JSON.parse(l)) });
  return { lines, log };
}

describe('a place given back whose answer is lost', () => {
  it('a look that frees a finished holder hands the place on even when the release answered "refused" on its retry', async () => {
    const slots = new DynamoFlowSlots(dynamo, tableName);
    const store = new DynamoJobStore(dynamo, tableName);
    const { slot, a } = await heldByFinishedJob(slots, store, 1);
    const b = `b-${n}`;
    await store.create(newJob({ id: b, type: 'echo' }));
    const joined = await slots.acquire({ slot, jobId: b, type: 'echo', now: NOW, token: 1 });
    expect(joined).toMatchObject({ kind: 'waiting', first: true });
    if (joined.kind !== 'waiting') return;
    const keeper = createLineKeeper({ slots, store, handOff: { queue: {} as never, routes: {} }, clock });
    loseReleaseAnswer(a);
    const { lines, log } = capture();
    await keeper.look(slot, joined, b, log);
    expect(faults.events.at(-1)).toMatchObject({ kind: 'server', phase: 'after' });
    // a's place is free, and b, first in line, is handed it (before the fix: nobody was, and
    // the line stood until another job looked at it)
    expect((await slots.state(slot)).holders).toMatchObject([{ jobId: b, token: 0 }]);
    expect(lines.filter((l) => l.holder === a).map((l) => l.message)).toHaveLength(1);
  });

  it("a finished job's delivery that gives back its place names the holder in a line, though the answer was lost", async () => {
    const slots = new DynamoFlowSlots(dynamo, tableName);
    const store = new DynamoJobStore(dynamo, tableName);
    // a place taken at enqueue (token 0) for a job that a replay of its request had already run
    const { slot, a } = await heldByFinishedJob(slots, store, 0);
    const gate = createFlowGate({ slots, store, handOff: { queue: {} as never, routes: {} }, clock });
    loseReleaseAnswer(a);
    const { lines, log } = capture();
    const job = await store.get(a);
    expect(await gate.leaveIfHeld(job as NonNullable<typeof job>, [slot], log)).toBe(true);
    expect(faults.events.at(-1)).toMatchObject({ kind: 'server', phase: 'after' });
    expect((await slots.state(slot)).holders).toEqual([]);
    // the line that says its place ended (what the chaos run's fair-share check reads)
    expect(lines.filter((l) => l.holder === a && l.scope === slot.scope).map((l) => l.message)).toEqual([
      'gave back a concurrency slot',
    ]);
  });
  it('a holder whose id is a name every object has (constructor) is handed on too', async () => {
    // job ids are letters, digits, _ . -: `constructor`, `toString` and `valueOf` are valid ones,
    // and the refused retry's item must be read for the job's own entry, not an object's member
    const slots = new DynamoFlowSlots(dynamo, tableName);
    const store = new DynamoJobStore(dynamo, tableName);
    n += 1;
    const slot: Slot = { scope: `lost-proto-${n}-${Date.now()}#0`, key: 'k', limit: 1 };
    const a = 'constructor';
    await store.create(newJob({ id: a, type: 'echo', state: 'succeeded', finishedAt: new Date(NOW).toISOString() }));
    await slots.acquire({ slot, jobId: a, type: 'echo', now: NOW, token: 1 });
    const b = `b-proto-${n}`;
    await store.create(newJob({ id: b, type: 'echo' }));
    const joined = await slots.acquire({ slot, jobId: b, type: 'echo', now: NOW, token: 1 });
    expect(joined).toMatchObject({ kind: 'waiting', first: true });
    if (joined.kind !== 'waiting') return;
    const keeper = createLineKeeper({ slots, store, handOff: { queue: {} as never, routes: {} }, clock });
    loseReleaseAnswer(a);
    const { lines, log } = capture();
    await keeper.look(slot, joined, b, log);
    expect(faults.events.at(-1)).toMatchObject({ kind: 'server', phase: 'after' });
    expect((await slots.state(slot)).holders).toMatchObject([{ jobId: b, token: 0 }]);
    expect(lines.filter((l) => l.holder === a).map((l) => l.message)).toEqual([
      'freed a concurrency slot its job never gave back',
    ]);
  });
  it('a retry refused because the place is held for another attempt is not a give-back', async () => {
    const slots = new DynamoFlowSlots(dynamo, tableName);
    n += 1;
    const slot: Slot = { scope: `lost-other-${n}-${Date.now()}#0`, key: 'k', limit: 1 };
    const a = `a-other-${n}`;
    await slots.acquire({ slot, jobId: a, type: 'echo', now: NOW, token: 2 });
    // the first try fails before it reaches the table; the SDK's retry is refused: the place is attempt 2's
    faults.script({
      match: (c) =>
        c.command === 'UpdateItem' &&
        String(c.input.UpdateExpression) === 'REMOVE hs.#id' &&
        (c.input.ExpressionAttributeNames as Record<string, string>)['#id'] === a,
      kind: 'server',
      phase: 'before',
    });
    expect(await slots.release({ slot, jobId: a, token: 1 })).toBe(false);
    expect(faults.events.at(-1)).toMatchObject({ kind: 'server', phase: 'before' });
    expect((await slots.state(slot)).holders).toMatchObject([{ jobId: a, token: 2 }]);
  });
});
