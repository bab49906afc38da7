/** Source of the current time. Tests pass a {@link ManualClock} and advance it instead of sleeping. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/**
 * Calls back once a span of time has passed on some clock. A worker takes one for its attempts'
 * timeouts (`WorkerDeps.timer`): the testing kit's in-memory mode passes one that runs on a
 * {@link ManualClock}, so that moving that clock past a job's timeout is what fires it.
 */
export interface Timer {
  /** Calls `fn` once, `ms` from now; the function returned cancels it. */
  after(ms: number, fn: () => void): () => void;
}

/** Node's own timers (real time). */
export const systemTimer: Timer = {
  after(ms, fn) {
    const timer = setTimeout(fn, ms);
    return () => clearTimeout(timer);
  },
};

/**
 * A clock that only moves when told to.
 *
 * @example
 * const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'));
 * clock.advance(2 * 3600_000);
 */
export class ManualClock implements Clock {
  private current: number;
  private readonly listeners = new Set<(now: number) => void>();

  constructor(start: number = Date.now()) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  /** Moves time forward by `ms` and notifies listeners. */
  advance(ms: number): number {
    if (ms < 0) throw new RangeError('a clock cannot go backwards');
    return this.set(this.current + ms);
  }

  /** Jumps to `ms` (never backwards) and notifies listeners. */
  set(ms: number): number {
    if (ms < this.current) throw new RangeError('a clock cannot go backwards');
    this.current = ms;
    for (const listener of this.listeners) listener(ms);
    return ms;
  }

  /** Called after every change of time; returns a function that unsubscribes. */
  onChange(listener: (now: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
