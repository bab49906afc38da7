/**
 * The line keeper's admissions of one slot run one after another in a process. One admission
 * whose hand-on never answers (an SQS send that hangs; in the chaos run, a killed record on a
 * container that is reused) must not make every admission queued behind it run at once.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { FlowSlots, Slot } from '../../shared/core/flow';
import type { JobStore } from '../../shared/core/ports';
import { createLineKeeper } from '../../shared/dispatch/line-keeper';
import { createLogger } from '../../shared/logger';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SLOT = { scope: 'echo#0', key: '*', limit: 1 } as Slot;

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
    const keeper = createLineKeeper({
      slots,
      store: {} as JobStore,
      handOff: { queue: {} as never, routes: {} },
      clock: { now: () => Date.now() },
    });
    const log = createLogger({ level: 'silent' });
    void keeper.admit(SLOT, log);
    // four jobs of a delivery batch give their places back and hand them on
    const others = Promise.all([1, 2, 3, 4].map(() => keeper.admit(SLOT, log)));
    await vi.advanceTimersByTimeAsync(5_000);
    await others;
    expect(calls).toBe(5);
    expect(most).toBe(1);
  });
});
