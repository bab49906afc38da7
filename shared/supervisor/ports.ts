import type { Job } from '../core/job';

/** One entry of the due index: an item whose `dueAt` passed. */
export interface DueEntry {
  /** The item's partition key: `job#<id>` or `schedule#<name>`. */
  pk: string;
  dueAt: number;
}

/** The due index and the supervisor's bookkeeping (DynamoDB in AWS). */
export interface DueIndex {
  /** Every entry of one bucket (`due#<minute>#<shard>`) with `dueAt <= upTo`, all pages. */
  query(bucket: string, upTo: number): Promise<DueEntry[]>;
  /** Start (epoch ms) of the oldest minute bucket the next run must read, if a run saved one. */
  getCheckpoint(): Promise<number | undefined>;
  setCheckpoint(minute: number): Promise<void>;
  /** A job with its due attribute and repair count (strongly consistent). */
  loadJob(id: string): Promise<{ job: Job; dueAt?: number; repairs: number } | undefined>;
  /**
   * Moves the item's `dueAt` from `from` to `to` (removes the due attributes when `to` is
   * undefined), only if it is still `from`; `repair` also counts a repair on the item. False
   * when the item changed first (a worker, the API or another supervisor got there).
   */
  moveDue(pk: string, from: number, to: number | undefined, options?: { repair?: boolean }): Promise<boolean>;
}
