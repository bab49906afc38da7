/**
 * Runs the calls that share a key one after another, in this process; calls of different keys
 * run at once. Nothing is dropped or merged: each call runs, in the order it came, and a call
 * that fails does not hold the next back.
 *
 * Why: the writers of one concurrency slot (the jobs of a batch joining its line, the jobs of a
 * delivery batch handing on the places they freed) write one DynamoDB item with conditional
 * transactions. Run at once, they refuse each other (`TransactionConflict`, or a condition that
 * another's write just broke) and try again; one after another, each finds what the one before
 * wrote. Across processes they still race, and the conditions keep that safe: taking turns is
 * an economy, never what makes a write correct.
 *
 * So a call waits for the one before it to end, but at most `maxWaitMs` from when that one
 * started: a call that never settles (a request that hangs, a process killed mid-call) costs the
 * next one that long, and the calls behind go on one after another. Calls must not nest on one
 * key: a call that waits for its own turn waits `maxWaitMs`.
 *
 * @example
 * const oneAtATime = createOneAtATime();
 * await oneAtATime.run(`admit#${scope}#${key}`, () => slots.admit({ slot, now }));
 */
export function createOneAtATime(options: { maxWaitMs?: number } = {}) {
  /** @default 2000 */
  const maxWaitMs = options.maxWaitMs ?? 2000;
  /** The last call of each key. */
  const tails = new Map<string, Turn>();
  return {
    async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
      const before = tails.get(key);
      const mine = turn();
      tails.set(key, mine);
      try {
        if (before) {
          await before.started.promise;
          await waitAtMost(before.ended.promise, maxWaitMs);
        }
        mine.started.resolve();
        return await fn();
      } finally {
        mine.started.resolve();
        mine.ended.resolve();
        if (tails.get(key) === mine) tails.delete(key);
      }
    },
    /** Keys with a call running or waiting. */
    get busy(): number {
      return tails.size;
    },
  };
}

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
}

/** A call's turn: when it started, and when it ended (neither ever rejects). */
interface Turn {
  started: Deferred;
  ended: Deferred;
}

function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const turn = (): Turn => ({ started: deferred(), ended: deferred() });

/** Waits for `p` (which never rejects), or `ms`, whichever comes first. */
async function waitAtMost(p: Promise<void>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    p,
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}

export type OneAtATime = ReturnType<typeof createOneAtATime>;
