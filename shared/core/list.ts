import * as z from 'zod';
import { ValidationError } from '../errors';
import type { IndexEntry, IndexPage, IndexPartition, JobSummary } from './control-ports';
import { JOB_ID_PATTERN } from './enqueue';
import { JOB_TYPE_PATTERN } from './job-type';
import type { PayloadCondition } from './payload-filter';
import type { JobState } from './states';
import { isSparseState, keys, SHARD_COUNT } from './table';

/**
 * Listing jobs newest first from the sharded GSIs (pure: no I/O).
 *
 * Every job has exactly one entry in `byType` (and a failed, cancelled or expired one, one in
 * the sparse `byTypeState`), in one of {@link SHARD_COUNT} partitions per type. A listing by
 * another state reads `byType` and keeps the jobs in that state (the state comes from the job
 * items, which the index reader reads anyway). Every partition is sorted by the same unique key
 * `<createdAt>#<id>`, so a k-way merge of the partitions, newest first, is the list.
 *
 * Pagination is exact: the cursor holds the sort key of the last job returned (the
 * boundary) and the partitions known to be exhausted. The next page asks every other partition
 * for keys strictly below the boundary, so nothing is returned twice and nothing is skipped.
 * Jobs created after the first page never appear on later pages (they sort above the
 * boundary), so a walk through the pages is never out of order.
 */

export const LIST_LIMIT_DEFAULT = 20;
export const LIST_LIMIT_MAX = 100;
/** Longest cursor accepted (a cursor carries the filters, one sort key and a bitmask per type). */
export const MAX_CURSOR_CHARS = 8192;

/** Filters of a listing, already validated; times are normalised `toISOString()` values. */
export interface ListFilter {
  type?: string;
  state?: JobState;
  /** Inclusive: `createdAt >= createdAfter`. */
  createdAfter?: string;
  /** Exclusive: `createdAt < createdBefore`. */
  createdBefore?: string;
  /** Payload conditions (see `payload-filter.ts`), sorted by path; all must match. */
  payload?: readonly PayloadCondition[];
}

/** One GSI partition the listing reads. `id` is `<type>#<shard>`. */
export interface ListSource {
  id: string;
  type: string;
  shard: number;
  partition: IndexPartition;
}

/** Where the next page starts. */
export interface CursorState {
  /** Sort key of the last job returned so far; the next page reads strictly below it. */
  boundary: string;
  /** Per type, a bitmask of the shards that have nothing left. */
  done: Record<string, number>;
}

/**
 * The partitions to read: every shard of each type, in `byTypeState` for a sparse state
 * (failed, cancelled, expired), else in `byType` (filtered by state after the read).
 */
export function listSources(filter: ListFilter, deployedTypes: readonly string[]): ListSource[] {
  const types = filter.type !== undefined ? [filter.type] : [...new Set(deployedTypes)].sort();
  const sources: ListSource[] = [];
  for (const type of types) {
    for (let shard = 0; shard < SHARD_COUNT; shard++) {
      const partition: IndexPartition =
        filter.state !== undefined && isSparseState(filter.state)
          ? { index: 'byTypeState', key: keys.byTypeStateShard(type, filter.state, shard) }
          : { index: 'byType', key: keys.byTypeShard(type, shard) };
      sources.push({ id: `${type}#${shard}`, type, shard, partition });
    }
  }
  return sources;
}

export function isDone(cursor: CursorState | undefined, source: ListSource): boolean {
  return cursor !== undefined && ((cursor.done[source.type] ?? 0) & (1 << source.shard)) !== 0;
}

/** Sort-key bounds of one page's queries: `below` exclusive, `atLeast` inclusive. */
export function sortKeyBounds(
  filter: ListFilter,
  cursor: CursorState | undefined,
): { below?: string; atLeast?: string } {
  const uppers = [cursor?.boundary, filter.createdBefore].filter((v): v is string => v !== undefined);
  const below = uppers.length > 0 ? uppers.reduce((a, b) => (a < b ? a : b)) : undefined;
  return {
    ...(below !== undefined ? { below } : {}),
    ...(filter.createdAfter !== undefined ? { atLeast: filter.createdAfter } : {}),
  };
}

/** Sort keys: `toISOString()` time, `#`, a job id. */
const SORT_KEY = new RegExp(
  `^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z#${JOB_ID_PATTERN.source.slice(1, -1)}$`,
);
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const cursorSchema = z
  .object({
    v: z.literal(1),
    q: z
      .object({
        t: z.string().regex(JOB_TYPE_PATTERN).optional(),
        s: z.string().max(40).optional(),
        a: z.string().regex(ISO_MS).optional(),
        b: z.string().regex(ISO_MS).optional(),
        p: z.string().max(2048).optional(),
      })
      .strict(),
    k: z.string().regex(SORT_KEY),
    d: z.record(
      z.string().regex(JOB_TYPE_PATTERN),
      z
        .int()
        .min(0)
        .max(2 ** SHARD_COUNT - 1),
    ),
  })
  .strict();

function queryOf(filter: ListFilter): z.output<typeof cursorSchema>['q'] {
  return {
    ...(filter.type !== undefined ? { t: filter.type } : {}),
    ...(filter.state !== undefined ? { s: filter.state } : {}),
    ...(filter.createdAfter !== undefined ? { a: filter.createdAfter } : {}),
    ...(filter.createdBefore !== undefined ? { b: filter.createdBefore } : {}),
    ...(filter.payload !== undefined && filter.payload.length > 0
      ? { p: JSON.stringify(filter.payload.map((c) => [c.path, c.value])) }
      : {}),
  };
}

/** The opaque cursor text: base64url of `{ v, q (the filters), k (boundary), d (done shards) }`. */
export function encodeCursor(filter: ListFilter, state: CursorState): string {
  const done = Object.fromEntries(Object.entries(state.done).filter(([, mask]) => mask !== 0));
  const body = { v: 1, q: queryOf(filter), k: state.boundary, d: done };
  return Buffer.from(JSON.stringify(body), 'utf8').toString('base64url');
}

function invalidCursor(why: string): ValidationError {
  return new ValidationError(
    `cursor is not valid for this query: ${why}`,
    [{ path: 'cursor', message: 'pass the nextCursor of the previous page with the same filters, or omit it' }],
    'invalid_cursor',
  );
}

/**
 * Reads a cursor back, strictly: it must be one this API issued for the same filters and
 * deployed types. Anything else is a 400 `invalid_cursor`.
 */
export function decodeCursor(raw: string, filter: ListFilter, sources: readonly ListSource[]): CursorState {
  if (raw.length === 0 || raw.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]+$/.test(raw)) {
    throw invalidCursor('not a cursor issued by this API');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    throw invalidCursor('not a cursor issued by this API');
  }
  const result = cursorSchema.safeParse(parsed);
  if (!result.success) throw invalidCursor('not a cursor issued by this API');
  const cursor = result.data;
  const expected = queryOf(filter);
  const sameQuery =
    Object.keys(cursor.q).length === Object.keys(expected).length &&
    (Object.keys(expected) as (keyof typeof expected)[]).every((key) => cursor.q[key] === expected[key]);
  if (!sameQuery) throw invalidCursor('it was issued for different filters');
  const types = new Set(sources.map((s) => s.type));
  for (const type of Object.keys(cursor.d)) {
    if (!types.has(type)) throw invalidCursor(`it names job type "${type}", which is not listed`);
  }
  if (filter.createdAfter !== undefined && cursor.k < filter.createdAfter) throw invalidCursor('outside the filters');
  if (filter.createdBefore !== undefined && cursor.k >= filter.createdBefore)
    throw invalidCursor('outside the filters');
  return { boundary: cursor.k, done: { ...cursor.d } };
}

/** What one page's queries returned, per source. */
export interface FetchedSource {
  source: ListSource;
  page: IndexPage;
}

/**
 * Merges the partitions' newest-first pages into one page of at most `limit` visible jobs.
 *
 * It never reads past a partition's last fetched entry while that partition has more
 * (below that point, entries of the partition were not fetched), so pages have no gaps even
 * when `visible` hides entries (a page may then hold fewer than `limit` jobs; follow
 * `next` until it is null). Without hidden entries, every page but the last is full.
 */
export function mergePage(input: {
  fetched: readonly FetchedSource[];
  limit: number;
  /** Entries to leave out (e.g. finished jobs past their retention that TTL has not deleted yet). */
  visible?: (summary: JobSummary, entry: IndexEntry) => boolean;
  /** The cursor this page started from (its exhausted shards stay exhausted). */
  cursor?: CursorState;
}): { items: JobSummary[]; next: CursorState | null } {
  const visible = input.visible ?? (() => true);
  let horizon: string | undefined;
  for (const { page } of input.fetched) {
    const last = page.entries.at(-1);
    if (page.more && last && (horizon === undefined || last.sortKey > horizon)) horizon = last.sortKey;
  }
  const all: { entry: IndexEntry; from: FetchedSource }[] = input.fetched.flatMap((from) =>
    from.page.entries.map((entry) => ({ entry, from })),
  );
  all.sort((a, b) => (a.entry.sortKey < b.entry.sortKey ? 1 : a.entry.sortKey > b.entry.sortKey ? -1 : 0));

  const items: JobSummary[] = [];
  let consumed = 0;
  for (const { entry } of all) {
    if (items.length >= input.limit) break;
    if (horizon !== undefined && entry.sortKey < horizon) break;
    consumed += 1;
    if (visible(entry.summary, entry)) items.push(entry.summary);
  }
  const lastKey = consumed > 0 ? all[consumed - 1]?.entry.sortKey : undefined;
  const boundary = lastKey ?? input.cursor?.boundary;

  const done: Record<string, number> = { ...(input.cursor?.done ?? {}) };
  let remaining = false;
  for (const { source, page } of input.fetched) {
    const last = page.entries.at(-1);
    const drained = !page.more && (last === undefined || (lastKey !== undefined && last.sortKey >= lastKey));
    if (drained) done[source.type] = (done[source.type] ?? 0) | (1 << source.shard);
    else remaining = true;
  }
  return { items, next: remaining && boundary !== undefined ? { boundary, done } : null };
}
