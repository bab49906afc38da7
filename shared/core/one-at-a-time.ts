/**
 * Runs the calls that share a key one after another, in this process; calls of different keys
 * run at once. Nothing is dropped or merged: each call runs, in the order it came, and a call
 * that fails does not hold the next back.
 *
 * Why: the writers of one concurrency slot (the jobs of a batch joining its line, the workers of
 * a delivery batch handing on places they freed) all write one DynamoDB item with conditional
 * transactions. Run at once, they refuse each other (`TransactionConflict`, or a condition that
 * another's write just broke) and try again; one after another, each finds what the one before
 * wrote. Across processes they still race, and the conditions keep that safe: taking turns is
 * an economy, never what makes a write correct.
 *
 * So a call waits for the one before it at most `maxWaitMs`, then runs anyway: a call that
 * never settles (a request that hangs, a process killed mid-call) costs the next one that long,
 * and holds nothing back after it.
 *
 * @example
 * const oneAtATime = createOneAtATime();
 * await oneAtATime.run(`admit#${scope}#${key}`, () => slots.admit({ slot, now }));
 */
export function createOneAtATime(options: { maxWaitMs?: number } = {}) {
  /** @default 2000 */
  const maxWaitMs = options.maxWaitMs ?? 2000;
  /** The last call of each key: resolves (never rejects) once that call has ended. */
  const tails = new Map<string, Promise<void>>();
  return {
    async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
      const before = tails.get(key);
      let done!: () => void;
      const mine = new Promise<void>((resolve) => {
        done = resolve;
      });
      tails.set(key, mine);
      try {
        if (before) await waitAtMost(before, maxWaitMs);
        return await fn();
      } finally {
        done();
        if (tails.get(key) === mine) tails.delete(key);
      }
    },
    /** Keys with a call running or waiting. */
    get busy(): number {
      return tails.size;
    },
  };
}

/** Waits for `p` (which never rejects), or `ms`, whichever comes first. */
async function waitAtMost(p: Promise<void>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    p,
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
      timer.unref?.();
    }),
  ]);
  clearTimeout(timer);
}

export type OneAtATime = ReturnType<typeof createOneAtATime>;
