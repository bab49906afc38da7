/**
 * Debounce, domain side: many jobs of one key enqueued close together make one run, with the last
 * payload, once the key has been quiet for the period (or once `maxWaitSeconds` has passed since
 * the first). No AWS here: the DynamoDB adapter is `shared/aws/dynamo-debouncer.ts`, the API's use
 * of it `shared/api/jobs-service.ts`; docs/flow-control.md explains the design and its costs.
 *
 * The newest job is always the run: it is written due at the end of the quiet period, and the run
 * it replaces (still waiting) ends `skipped`, pointing to it. A key's window stays open from its
 * first job until its run starts; the next job after that opens a new one.
 */

import { computeFlowKey, WHOLE_TYPE_KEY } from './flow';

/** Longest quiet period: a week. */
export const MAX_DEBOUNCE_PERIOD_SECONDS = 7 * 86_400;
/**
 * Longest `maxWaitSeconds`: a year, the horizon of any delay (`MAX_HORIZON_SECONDS` in
 * enqueue.ts, which is not imported here: that module's imports lead back to this one).
 */
export const MAX_DEBOUNCE_WAIT_SECONDS = 366 * 86_400;

/**
 * A debounce.
 *
 * @example
 * // reindex a catalog once it has had no change for 30 s, and at least every 5 minutes
 * debounce: { key: (p) => p.catalogId, periodSeconds: 30, maxWaitSeconds: 300 }
 */
export interface DebounceOptions<Payload = never> {
  /** The key value of a job, from its payload. @default one key for the whole job type */
  key?(payload: Payload): string;
  /** How long the key must be quiet before the run starts, in seconds: 1 to a week. */
  readonly periodSeconds: number;
  /**
   * Longest a run is put off after the window's first job, in seconds (at least the period).
   * @default none: a key that never goes quiet never runs
   */
  readonly maxWaitSeconds?: number;
}

export function debounceProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null)
    return 'debounce must be an object { periodSeconds, key?, maxWaitSeconds? }';
  const { key, periodSeconds, maxWaitSeconds } = value as Record<string, unknown>;
  const int = (v: unknown, min: number, max: number) =>
    typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
  if (!int(periodSeconds, 1, MAX_DEBOUNCE_PERIOD_SECONDS)) {
    return `debounce.periodSeconds must be an integer from 1 to ${MAX_DEBOUNCE_PERIOD_SECONDS}`;
  }
  if (maxWaitSeconds !== undefined && !int(maxWaitSeconds, periodSeconds as number, MAX_DEBOUNCE_WAIT_SECONDS)) {
    return `debounce.maxWaitSeconds must be an integer from periodSeconds to ${MAX_DEBOUNCE_WAIT_SECONDS}`;
  }
  if (key !== undefined && typeof key !== 'function') return 'debounce.key must be a function of the payload';
  return undefined;
}

export function resolveDebounceKey(options: { key?(payload: unknown): string }, payload: unknown): string {
  if (!options.key) return WHOLE_TYPE_KEY;
  return computeFlowKey(options.key, payload, 'debounce.key', 'invalid_debounce_key');
}

/** When the run of a window that began at `first` starts, for a job enqueued at `now`. */
export function debounceRunAt(now: number, first: number, options: Omit<DebounceOptions, 'key'>): number {
  const quiet = now + options.periodSeconds * 1000;
  if (options.maxWaitSeconds === undefined) return quiet;
  return Math.max(now, Math.min(quiet, first + options.maxWaitSeconds * 1000));
}

/** The debounce scope of a job type: `<type>~d`. */
export function debounceScope(type: string): string {
  return `${type}~d`;
}

/** What a key's window item says: the open window (its run and start), and the last window that closed. */
export interface DebounceWindow {
  /** The open window's pending run, and when it began; absent when none is open. */
  run?: string;
  first?: number;
  /** The run that closed the last window (it started), and when that window began. */
  lastRun?: string;
  lastFirst?: number;
}

/** Keeps each debounce key's open window: its pending run and when it began. */
export interface Debouncer {
  /**
   * Makes `jobId` the key's pending run. Returns the run it replaces (undefined when the window
   * was closed, or `jobId` was the run already), when the window began (`now` for a new one), and
   * the open's `seq`: 1, 2, 3… per key, over all its windows, one per call (a replay's open counts
   * too). A job may replace only jobs of a lower `seq`, so replacements never form a cycle.
   */
  open(input: {
    scope: string;
    key: string;
    jobId: string;
    now: number;
  }): Promise<{ previous?: string; first: number; seq: number }>;
  /**
   * Closes the window whose run is `jobId` (it started), remembering it as the last window's run;
   * does nothing when another job is the run now.
   */
  close(input: { scope: string; key: string; jobId: string }): Promise<void>;
  /**
   * Makes `to` the open window's run if `from` is (one conditional write). Returns false when the
   * window names another job, or none.
   */
  adopt(input: { scope: string; key: string; from: string; to: string }): Promise<boolean>;
  /** The key's window item (`{}` when there is none). */
  state(input: { scope: string; key: string }): Promise<DebounceWindow>;
}
