/**
 * The line keeper's admissions, and its takes and joins at enqueue, of one slot run one after another in a
 * process (those that gather meanwhile go together). One admission
 * whose hand-on never answers (an SQS send that hangs; in the chaos run, a killed record on a
 * container that is reused) must not make every admission queued behind it run at once.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AcquireInput, FlowSlots, Slot } from '../../shared/core/flow';
import type { JobStore } from '../../shared/core/ports';
import { createLineKeeper } from '../../shared/dispatch/line-keeper';
import { createLogger } from '../../shared/logger';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SLOT = { scope: 'echo#0', key: '*', limit: 1 } as Slot;

/** A line keeper over `slots` alone (no store, no queue: these tests never reach them). */
const keeperOf = (slots: FlowSlots) =>
  createLineKeeper({
    slots,
    store: {} as JobStore,
    handOff: { queue: {} as never, routes: {} },
    clock: { now: () => Date.now() },
  });

describe("the line keeper's admissions of one slot", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('after one admission hangs, the ones queued behind it still run one at a time', async () => {
    let running = 0;
    let most = 0;
    let calls = 0;
    const slots = {
      async admit() {
        calls += 1;
        // the first admission hands a place on, and its send never answers
        if (calls === 1) return await new Promise<never>(() => {});
        running += 1;
        most = Math.max(most, running);
        await sleep(300); // a read and a transaction
        running -= 1;
        return [];
      },
    } as unknown as FlowSlots;
    const keeper = keeperOf(slots);
    const log = createLogger({ level: 'silent' });
    void keeper.admit(SLOT, log);
    // four jobs of a delivery batch give their places back and hand them on
    const others = Promise.all([1, 2, 3, 4].map(() => keeper.admit(SLOT, log)));
    await vi.advanceTimersByTimeAsync(5_000);
    await others;
    // the four came while the first ran: they share the next admission, which runs alone
    expect(calls).toBe(2);
    expect(most).toBe(1);
  });

  it('admissions asked for while one runs share the next one, which starts after every ask; a later ask gets its own', async () => {
    const started: number[] = [];
    let calls = 0;
    const slots = {
      async admit() {
        calls += 1;
        started.push(Date.now());
        await sleep(300); // a read and a transaction
        if (calls === 2) throw new Error('DynamoDB is down');
        return [];
      },
    } as unknown as FlowSlots;
    const keeper = keeperOf(slots);
    const log = createLogger({ level: 'silent' });
    const t0 = Date.now();
    const first = keeper.admit(SLOT, log);
    await vi.advanceTimersByTimeAsync(100);
    // three places given back while the first admission runs
    const shared = [1, 2, 3].map(() =>
      keeper.admit(SLOT, log).then(
        () => 'handed on',
        (e: Error) => e.message,
      ),
    );
    await vi.advanceTimersByTimeAsync(250);
    // one given back while the shared admission runs: it may have read the slot before this one
    const later = keeper.admit(SLOT, log);
    await vi.advanceTimersByTimeAsync(2_000);
    await first;
    await later;
    expect(await Promise.all(shared)).toEqual(['DynamoDB is down', 'DynamoDB is down', 'DynamoDB is down']);
    expect(calls).toBe(3);
    // one after another: each starts when the one before ended
    expect(started.map((t) => t - t0)).toEqual([0, 300, 600]);
  });

  it('takes and joins at enqueue that gather while a turn runs go together in the next, each given its own answer', async () => {
    const batches: string[][] = [];
    const slots = {
      async acquire() {
        throw new Error('acquireMany is used');
      },
      async acquireMany(inputs: readonly AcquireInput[]) {
        batches.push(inputs.map((i) => i.jobId));
        await sleep(50);
        if (inputs.some((i) => i.jobId === 'boom')) throw new Error('DynamoDB is down');
        return inputs.map((i) => ({ kind: 'waiting' as const, rank: i.rank, first: false, holders: [] }));
      },
    } as unknown as FlowSlots;
    const keeper = keeperOf(slots);
    const place = (jobId: string) =>
      keeper.placeInTurn({ slot: SLOT, jobId, type: 'echo', now: 0, token: 0, rank: `r-${jobId}` });
    const answers = Promise.all(['a', 'b', 'c', 'd'].map(place));
    await vi.advanceTimersByTimeAsync(200);
    // a's turn began at once, alone; b, c and d gathered meanwhile
    expect(batches).toEqual([['a'], ['b', 'c', 'd']]);
    expect((await answers).map((a) => (a.kind === 'waiting' ? a.rank : a.kind))).toEqual(['r-a', 'r-b', 'r-c', 'r-d']);
    // a turn that fails fails each of its places (each job is then sent, and its delivery takes its place)
    const failed = Promise.allSettled([place('x'), place('boom'), place('y')]);
    await vi.advanceTimersByTimeAsync(200);
    expect((await failed).map((f) => f.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
  });
  it('a turn that fails part-way keeps the answers it had: only the places it did not answer fail', async () => {
    const calls: string[] = [];
    const slots = {
      async acquire(input: AcquireInput) {
        calls.push(input.jobId);
        await sleep(50);
        if (input.jobId === 'c') throw new Error('DynamoDB is down');
        return { kind: 'waiting' as const, rank: input.rank, first: false, holders: [] };
      },
    } as unknown as FlowSlots;
    const keeper = keeperOf(slots);
    const place = (jobId: string) =>
      keeper.placeInTurn({ slot: SLOT, jobId, type: 'echo', now: 0, token: 0, rank: `r-${jobId}` });
    const settled = Promise.allSettled(['a', 'b', 'c', 'd'].map(place));
    await vi.advanceTimersByTimeAsync(500);
    // a alone, then b, c and d together: b joined before c's call failed, and waits in line
    // (sent to its queue as if it had not, its delivery would find its entry, or past the cap of
    // fair keys join a second line); c and d are sent, and their deliveries take their places
    expect(calls).toEqual(['a', 'b', 'c']);
    expect((await settled).map((f) => f.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'rejected']);
  });
});
