/**
 * The due index's port: what the supervisor reads and moves (DynamoDB in AWS,
 * shared/aws/dynamo-due-index.ts), here so the adapter and its in-memory stand-in implement it
 * without importing the supervisor.
 */
import type { Job } from './job';

/** One entry of the due index: an item whose `dueAt` passed. */
export interface DueEntry {
  /** The item's partition key: `job#<id>`, `schedule#<name>`, or a signal's inbox `job#<id>#<incarnation>#inbox`. */
  pk: string;
  /** The item's sort key, for an item that shares its partition key (a signal's: its name); absent for one alone under it. */
  sk?: string;
  dueAt: number;
}

/** The key of an item with a due attribute: a partition key alone, or an entry's key. */
export type DueKey = string | Pick<DueEntry, 'pk' | 'sk'>;

/** The supervisor's two read positions: the due index's minute buckets, and the creation sweep's minutes. */
export type CheckpointName = 'due' | 'sweep';

/**
 * A read position: the minute the next pass reads on from, and older minutes it reads again
 * because a read or a repair there failed. A failure is retried at its own minute rather than
 * holding the position, so one item whose repair keeps failing holds back no other repair.
 */
export interface Checkpoint {
  /** Start (epoch ms) of the oldest minute the next pass reads in order. */
  minute: number;
  /** Starts (epoch ms) of earlier minutes to read again. @default none */
  retry: number[];
}

/** The due index, the creation sweep and the supervisor's bookkeeping (DynamoDB in AWS). */
export interface DueIndex {
  /** Every entry of one bucket (`due#<minute>#<shard>`) with `dueAt <= upTo`, all pages. */
  query(bucket: string, upTo: number): Promise<DueEntry[]>;
  /**
   * The jobs of one `byType` partition (`<type>#<shard>`) created in `[fromMs, toMs)` (id and
   * creation time, epoch ms), all pages.
   */
  created(partition: string, fromMs: number, toMs: number): Promise<{ id: string; createdAt: number }[]>;
  /**
   * Of `ids`, those whose job is not finished and carries no due entry (eventually consistent
   * reads: a job that just finished may still look unfinished, never the reverse for long).
   */
  unfinished(ids: readonly string[]): Promise<string[]>;
  /** Where the next pass starts, and the older minutes it reads again, if a pass saved them. */
  getCheckpoint(name?: CheckpointName): Promise<Checkpoint | undefined>;
  /**
   * Saves where the next pass starts, deletes the `done` minutes from the retry list and adds the
   * `failed` ones. The list changes as set deletes and adds, so passes that overlap merge their
   * failures instead of one overwriting the other's.
   */
  setCheckpoint(
    update: { minute: number; done: readonly number[]; failed: readonly number[] },
    name?: CheckpointName,
  ): Promise<void>;
  /** A job with its due attribute and repair count (strongly consistent). */
  loadJob(id: string): Promise<{ job: Job; dueAt?: number; repairs: number } | undefined>;
  /**
   * Moves the item's `dueAt` from `from` (undefined: the item has none yet) to `to`, only if it
   * is still `from`; `repair` also counts a repair on the item. A job's entry moves in the due
   * index; a schedule's `dueAt` is a plain attribute. False when the item changed first (a
   * worker, the API or another supervisor got there).
   */
  moveDue(key: DueKey, from: number | undefined, to: number, options?: { repair?: boolean }): Promise<boolean>;
}
