import type { Clock } from '../../shared/core/clock';

/**
 * A clock that runs with real time but can jump ahead: `now()` is `Date.now()` plus an offset
 * that only grows. Give the same instance to the platform (API, workers, supervisor) and to the
 * Scheduler stand-in, so "two hours later" is two hours later for all of them, while SQS delays
 * and visibility timeouts (real seconds) still pass as they would. Listeners (the stand-in's
 * auto-fire) hear about every jump, like `ManualClock.onChange`.
 *
 * @example
 * const clock = new ShiftedClock();
 * const aws = await startLocalAws({ dynamodbEndpoint, clock });
 * clock.jumpTo(runAt - 3_000); // the schedule fires now; the job starts 3 real seconds later
 */
export class ShiftedClock implements Clock {
  private offset = 0;
  private readonly listeners = new Set<(now: number) => void>();

  now(): number {
    return Date.now() + this.offset;
  }

  /** Jumps forward by `ms`. */
  advance(ms: number): number {
    if (ms < 0) throw new RangeError('a clock cannot go backwards');
    this.offset += ms;
    const now = this.now();
    for (const listener of this.listeners) listener(now);
    return now;
  }

  /** Jumps to `ms` (epoch); a time already passed is a no-op. */
  jumpTo(ms: number): number {
    return this.advance(Math.max(0, ms - this.now()));
  }

  onChange(listener: (now: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
