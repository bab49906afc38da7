/**
 * Handlers for flow-control tests: each blocks until the test releases it, and the set counts how
 * many run at once, physically (whatever the job's state says), so a test can assert a limit.
 */

const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

export interface HeldHandlerOptions {
  /** Stop (and throw the signal's reason) when the attempt's signal aborts. @default false: run on, as a handler that ignores its signal */
  honourAbort?: boolean;
  /** The first execution of this job throws at once instead of blocking. */
  failFirstOf?: string;
}

export function heldHandlers(options: HeldHandlerOptions = {}) {
  const open = new Map<string, () => void>();
  const running = new Set<string>();
  const started: string[] = [];
  let peak = 0;
  let failed = false;
  return {
    /** Most handlers that ever ran at once. */
    get peak() {
      return peak;
    },
    running,
    /** Job ids in the order their handlers started. */
    started,
    run: async (_payload: unknown, ctx: { jobId: string; signal?: AbortSignal }) => {
      if (ctx.jobId === options.failFirstOf && !failed) {
        failed = true;
        throw new Error('boom');
      }
      running.add(ctx.jobId);
      started.push(ctx.jobId);
      peak = Math.max(peak, running.size);
      try {
        await new Promise<void>((resolve, reject) => {
          open.set(ctx.jobId, resolve);
          const signal = ctx.signal;
          if (options.honourAbort && signal) {
            signal.addEventListener('abort', () => reject(signal.reason), { once: true });
          }
        });
      } finally {
        running.delete(ctx.jobId);
      }
      return 'ok';
    },
    release: (id: string) => open.get(id)?.(),
    /** Waits (up to about a second) until `id`'s handler runs. */
    async until(id: string) {
      for (let i = 0; i < 1000 && !running.has(id); i++) await tick();
    },
  };
}

/** Most intervals overlapping at once (an end and a start at the same millisecond do not overlap). */
export function maxOverlap(intervals: readonly { start: number; end: number }[]): number {
  const events = intervals.flatMap((i) => [
    { at: i.start, d: 1 },
    { at: i.end, d: -1 },
  ]);
  events.sort((a, b) => a.at - b.at || a.d - b.d);
  let now = 0;
  let max = 0;
  for (const e of events) {
    now += e.d;
    max = Math.max(max, now);
  }
  return max;
}
