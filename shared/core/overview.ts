import type { IndexPage, JobSummary } from './control-ports';
import { JOB_STATES, type JobState } from './states';

/**
 * The dashboard overview of one job type (pure: no I/O), from the jobs created within a window.
 *
 * The table has no counter per state (one would cost a write at every state change of every job,
 * on a hot key), and no index by a common state; it has `byType`, sorted by creation time. So the
 * overview reads the newest entries of each `byType` shard created since the window start (at
 * most {@link OVERVIEW_READ_PER_SHARD} per shard, one `Query` each) with their state, and counts
 * those. When a shard held more, the counted range is cut where every shard is still complete
 * (the newest of the shards' last entries read): what is counted is then exactly the jobs
 * created since that time, and `countsScope` says so.
 */

/** `byType` entries one overview reads per shard of a type: one Query (and one BatchGetItem). */
export const OVERVIEW_READ_PER_SHARD = 100;
/** Bucket widths the series may use, the smallest that keeps it within {@link OVERVIEW_MAX_BUCKETS}. */
export const OVERVIEW_BUCKET_STEPS_MS: readonly number[] = [1, 2, 5, 10, 15, 30, 60].map((m) => m * 60_000);
/** Buckets a series holds at most (one more when the window does not start on a bucket). */
export const OVERVIEW_MAX_BUCKETS = 60;

export interface OverviewWindow {
  /** Epoch ms; the start of the first bucket (the window's start, rounded down to a bucket). */
  windowStart: number;
  bucketMs: number;
  /** Buckets from `windowStart` up to and including the one holding `now`. */
  buckets: number;
}

/**
 * The window of an overview: buckets of the smallest width in {@link OVERVIEW_BUCKET_STEPS_MS}
 * that gives at most {@link OVERVIEW_MAX_BUCKETS} over `windowMinutes`, aligned to the epoch (so
 * two overviews a moment apart share their buckets), the first one holding `now - window`.
 *
 * @example
 * overviewWindow(Date.parse('2026-06-01T12:34:56Z'), 60);
 * // { windowStart: Date.parse('2026-06-01T11:34:00Z'), bucketMs: 60_000, buckets: 61 }
 */
export function overviewWindow(now: number, windowMinutes: number): OverviewWindow {
  const windowMs = windowMinutes * 60_000;
  const bucketMs =
    OVERVIEW_BUCKET_STEPS_MS.find((step) => windowMs / step <= OVERVIEW_MAX_BUCKETS) ??
    (OVERVIEW_BUCKET_STEPS_MS.at(-1) as number);
  const windowStart = Math.floor((now - windowMs) / bucketMs) * bucketMs;
  const buckets = Math.floor((now - windowStart) / bucketMs) + 1;
  return { windowStart, bucketMs, buckets };
}

export interface OverviewBucket {
  start: string;
  created: number;
  succeeded: number;
  failed: number;
}

export interface TypeOverview {
  type: string;
  counts: Record<JobState, number>;
  countsScope: string;
  dlqDepth: number | null;
  oldestQueuedAgeMs: number | null;
  series: OverviewBucket[];
}

/**
 * Counts, series and oldest queued job of one type from the `byType` pages of its shards (each
 * read newest first from the window start, entries `<createdAt>#<id>`).
 */
export function summarizeType(input: {
  type: string;
  pages: readonly IndexPage[];
  window: OverviewWindow;
  now: number;
  dlqDepth: number | null;
}): TypeOverview {
  const { window, now } = input;
  // Where every shard is still complete: the newest last entry of a shard that has more.
  let horizon: string | undefined;
  for (const page of input.pages) {
    const last = page.entries.at(-1);
    if (page.more && last && (horizon === undefined || last.sortKey > horizon)) horizon = last.sortKey;
  }
  const counted: JobSummary[] = input.pages.flatMap((page) =>
    page.entries.filter((entry) => horizon === undefined || entry.sortKey >= horizon).map((entry) => entry.summary),
  );

  const counts = Object.fromEntries(JOB_STATES.map((state) => [state, 0])) as Record<JobState, number>;
  const series: OverviewBucket[] = Array.from({ length: window.buckets }, (_, i) => ({
    start: new Date(window.windowStart + i * window.bucketMs).toISOString(),
    created: 0,
    succeeded: 0,
    failed: 0,
  }));
  const bucketOf = (iso: string | null) => {
    if (iso === null) return undefined;
    const i = Math.floor((Date.parse(iso) - window.windowStart) / window.bucketMs);
    return series[i];
  };
  let oldestQueuedAgeMs: number | null = null;
  for (const job of counted) {
    counts[job.state] = (counts[job.state] ?? 0) + 1;
    const created = bucketOf(job.createdAt);
    if (created) created.created += 1;
    if (job.state === 'succeeded' || job.state === 'failed') {
      const finished = bucketOf(job.finishedAt);
      if (finished) finished[job.state] += 1;
    }
    if (job.state === 'queued') {
      const age = now - Date.parse(job.runAt);
      if (age >= 0 && (oldestQueuedAgeMs === null || age > oldestQueuedAgeMs)) oldestQueuedAgeMs = age;
    }
  }
  const since = horizon === undefined ? new Date(window.windowStart).toISOString() : horizon.slice(0, 24);
  const countsScope =
    horizon === undefined
      ? `all ${counted.length} jobs created since ${since} (the whole window)`
      : `the ${counted.length} newest jobs, created since ${since} (truncated: the window holds more jobs than an overview reads)`;
  return {
    type: input.type,
    counts,
    countsScope,
    dlqDepth: input.dlqDepth,
    oldestQueuedAgeMs,
    series,
  };
}
