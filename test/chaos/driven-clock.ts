/**
 * The driven clock of the system chaos run: real time plus an offset that the run moves
 * forward only at quiescent points (no lease held, no handler running), so leases, heartbeats
 * and handler timeouts keep their real-time meaning while far-future work (Scheduler fires,
 * backoffs of many hours, recurring slots) is reached in seconds.
 */
import type { Clock } from '../../shared/core/clock';

/** Real time plus a forward-only offset. */
export class DrivenClock implements Clock {
  private offsetMs = 0;
  /** Every jump made, in order (driven time before and after). */
  readonly jumps: { from: number; to: number }[] = [];

  constructor(start?: number) {
    if (start !== undefined) this.offsetMs = start - Date.now();
  }

  now(): number {
    return Date.now() + this.offsetMs;
  }

  /** Moves the clock forward by `ms` at once; only call it when nothing holds a lease. */
  jump(ms: number): number {
    if (ms < 0) throw new RangeError('the driven clock never goes backwards');
    const from = this.now();
    this.offsetMs += ms;
    this.jumps.push({ from, to: from + ms });
    return from + ms;
  }

  /** Total of all jumps (driven time ahead of real time, since the start). */
  get jumpedMs(): number {
    return this.jumps.reduce((sum, j) => sum + (j.to - j.from), 0);
  }
}

/** A worker's own clock: the driven clock plus a fixed skew. */
export class SkewedClock implements Clock {
  constructor(
    private readonly base: Clock,
    /** Milliseconds this clock is ahead of `base` (negative: behind). */
    readonly skewMs: number,
  ) {}

  now(): number {
    return this.base.now() + this.skewMs;
  }
}
