/**
 * A {@link Timer} that runs on a {@link ManualClock}: a callback fires when the clock is moved to
 * or past its time, never by itself. The in-memory mode gives it to the workers, so that a job's
 * timeout fires when a test moves the clock past it (`platform.advance(ms)`), not after real time.
 */
import type { ManualClock, Timer } from '../../shared/core/clock';

interface Pending {
  at: number;
  fn: () => void;
}

export class ManualTimer implements Timer {
  private readonly pending = new Set<Pending>();
  private readonly unsubscribe: () => void;

  constructor(private readonly clock: ManualClock) {
    this.unsubscribe = clock.onChange((now) => this.fire(now));
  }

  after(ms: number, fn: () => void): () => void {
    const entry = { at: this.clock.now() + Math.max(0, ms), fn };
    this.pending.add(entry);
    if (ms <= 0) queueMicrotask(() => this.fire(this.clock.now()));
    return () => {
      this.pending.delete(entry);
    };
  }

  /** The earliest time a pending callback waits for, if any. */
  next(): number | undefined {
    let next: number | undefined;
    for (const entry of this.pending) if (next === undefined || entry.at < next) next = entry.at;
    return next;
  }

  /** How many callbacks wait. */
  get size(): number {
    return this.pending.size;
  }

  /** Fires every pending callback now, whatever its time (a platform that stops ends its attempts' waits). */
  fireAll(): void {
    const all = [...this.pending].sort((a, b) => a.at - b.at);
    this.pending.clear();
    for (const entry of all) entry.fn();
  }

  /** Stops following the clock; pending callbacks never fire. */
  dispose(): void {
    this.unsubscribe();
    this.pending.clear();
  }

  private fire(now: number): void {
    const due = [...this.pending].filter((entry) => entry.at <= now).sort((a, b) => a.at - b.at);
    for (const entry of due) {
      if (!this.pending.delete(entry)) continue; // cancelled by an earlier callback
      entry.fn();
    }
  }
}
