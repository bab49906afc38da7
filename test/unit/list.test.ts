import { describe, expect, it } from 'vitest';
import type { JobsService } from '../../shared/api/jobs-service';
import { ListService } from '../../shared/api/list-service';
import { ManualClock } from '../../shared/core/clock';
import type { IndexEntry, IndexPage, IndexQuery, JobIndex, JobSummary } from '../../shared/core/control-ports';
import {
  type CursorState,
  decodeCursor,
  encodeCursor,
  type ListFilter,
  listSources,
  mergePage,
  sortKeyBounds,
} from '../../shared/core/list';
import type { JobState } from '../../shared/core/states';
import { keys, SHARD_COUNT } from '../../shared/core/table';
import { ValidationError } from '../../shared/errors';
import { testConfig } from '../support/fakes';

/** A deterministic pseudo-random generator (mulberry32). */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const T0 = Date.parse('2026-03-01T00:00:00.000Z');

function summary(
  id: string,
  type: string,
  createdMs: number,
  state: JobState = 'queued',
  finishedAt?: string,
): JobSummary {
  const createdAt = new Date(createdMs).toISOString();
  return { id, type, state, createdAt, runAt: createdAt, attempts: 0, finishedAt: finishedAt ?? null };
}

/**
 * The GSIs in memory, with DynamoDB's Query semantics: one partition per call, sort key
 * descending, key conditions `< below` / `>= atLeast` / BETWEEN, `Limit`. With `truncate`,
 * it sometimes returns fewer entries than asked while saying there are more (DynamoDB's 1 MB page).
 */
class MemoryJobIndex implements JobIndex {
  readonly jobs: JobSummary[] = [];
  readonly queries: IndexQuery[] = [];

  constructor(private readonly truncate?: () => number) {}

  add(job: JobSummary): void {
    this.jobs.push(job);
  }

  async query(query: IndexQuery): Promise<IndexPage> {
    this.queries.push(query);
    const entries: IndexEntry[] = this.jobs
      .filter((job) =>
        query.partition.index === 'byType'
          ? keys.byType(job.type, job.id) === query.partition.key
          : keys.byTypeState(job.type, job.state, job.id) === query.partition.key,
      )
      .map((job) => ({ sortKey: keys.created(job.createdAt, job.id), summary: job }))
      .filter(
        (e) =>
          (query.below === undefined || e.sortKey < query.below) &&
          (query.atLeast === undefined || e.sortKey >= query.atLeast),
      )
      .sort((a, b) => (a.sortKey < b.sortKey ? 1 : -1));
    let take = Math.min(query.limit, entries.length);
    if (this.truncate && take > 1) take = Math.max(1, Math.floor(take * this.truncate()));
    return { entries: entries.slice(0, take), more: entries.length > take };
  }
}

function service(index: JobIndex, types = ['echo', 'flaky', 'sleep'], clock = new ManualClock(T0 + 86_400_000)) {
  return new ListService({
    config: testConfig(types, { retentionDays: 30 }),
    index,
    jobs: {} as JobsService,
    clock,
  });
}

/** Every page, following nextCursor to the end. */
async function walk(list: ListService, query: Record<string, string>): Promise<{ pages: JobSummary[][] }> {
  const pages: JobSummary[][] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 1000; i++) {
    const page = await list.list({ ...query, ...(cursor ? { cursor } : {}) });
    pages.push(page.items);
    if (page.nextCursor === null) return { pages };
    cursor = page.nextCursor;
  }
  throw new Error('too many pages');
}

const newestFirst = (jobs: JobSummary[]) =>
  [...jobs].sort((a, b) => {
    const ka = keys.created(a.createdAt, a.id);
    const kb = keys.created(b.createdAt, b.id);
    return ka < kb ? 1 : -1;
  });

describe('listSources', () => {
  it('reads every shard of the given type from byType, or from byTypeState with a state', () => {
    const byType = listSources({ type: 'echo' }, ['echo', 'sleep']);
    expect(byType.map((s) => s.partition)).toEqual(
      Array.from({ length: SHARD_COUNT }, (_, shard) => ({ index: 'byType', key: `echo#${shard}` })),
    );
    const byState = listSources({ type: 'echo', state: 'failed' }, ['echo']);
    expect(byState.map((s) => s.partition.key)).toEqual(
      Array.from({ length: SHARD_COUNT }, (_, shard) => `echo#failed#${shard}`),
    );
    expect(byState.every((s) => s.partition.index === 'byTypeState')).toBe(true);
  });

  it('fans out over every deployed type, sorted, when no type is given', () => {
    const sources = listSources({}, ['sleep', 'echo']);
    expect(sources).toHaveLength(2 * SHARD_COUNT);
    expect(sources[0]?.id).toBe('echo#0');
    expect(sources.at(-1)?.id).toBe(`sleep#${SHARD_COUNT - 1}`);
  });

  it('uses the same partition keys the store writes', () => {
    for (const id of ['a', 'b', 'order-1234', 'x.y_z']) {
      const shard = Number(keys.byType('echo', id).split('#')[1]);
      expect(keys.byTypeShard('echo', shard)).toBe(keys.byType('echo', id));
      expect(keys.byTypeStateShard('echo', 'queued', shard)).toBe(keys.byTypeState('echo', 'queued', id));
    }
  });
});

describe('sortKeyBounds', () => {
  const k = '2026-03-01T00:00:05.000Z#job-5';
  it('has no bounds without filters or cursor', () => {
    expect(sortKeyBounds({}, undefined)).toEqual({});
  });
  it('reads below the cursor boundary and createdBefore, whichever is lower, and at or above createdAfter', () => {
    const cursor: CursorState = { boundary: k, done: {} };
    expect(sortKeyBounds({ createdBefore: '2026-03-01T00:00:09.000Z' }, cursor)).toEqual({ below: k });
    expect(sortKeyBounds({ createdBefore: '2026-03-01T00:00:01.000Z' }, cursor)).toEqual({
      below: '2026-03-01T00:00:01.000Z',
    });
    expect(sortKeyBounds({ createdAfter: '2026-03-01T00:00:00.000Z' }, undefined)).toEqual({
      atLeast: '2026-03-01T00:00:00.000Z',
    });
  });
  it('makes createdAfter inclusive and createdBefore exclusive on the sort key', () => {
    const at = '2026-03-01T00:00:05.000Z';
    const key = keys.created(at, 'zzz');
    expect(key >= at).toBe(true); // createdAt == createdAfter is in
    expect(key < at).toBe(false); // createdAt == createdBefore is out
  });
});

describe('cursor', () => {
  const sources = listSources({}, ['echo', 'sleep']);
  const filter: ListFilter = { state: 'failed', createdAfter: '2026-01-01T00:00:00.000Z' };
  const state: CursorState = { boundary: '2026-03-01T00:00:05.000Z#job-5', done: { echo: 0b101 } };

  it('round-trips, as base64url text', () => {
    const text = encodeCursor(filter, state);
    expect(text).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(text, filter, sources)).toEqual(state);
  });

  const forge = (body: unknown) => Buffer.from(JSON.stringify(body)).toString('base64url');
  const good = { v: 1, q: { s: 'failed', a: '2026-01-01T00:00:00.000Z' }, k: state.boundary, d: { echo: 5 } };
  const bad: [string, string][] = [
    ['empty', ''],
    ['not base64url', 'abc+/='],
    ['not JSON', Buffer.from('{nope').toString('base64url')],
    ['a JSON array', forge([1, 2])],
    ['too long', 'A'.repeat(5000)],
    ['another version', forge({ ...good, v: 2 })],
    ['an extra field', forge({ ...good, x: 1 })],
    ['a malformed boundary', forge({ ...good, k: 'DROP TABLE jobs' })],
    ['a boundary with an invalid id', forge({ ...good, k: '2026-03-01T00:00:05.000Z#../../etc' })],
    ['a shard mask out of range', forge({ ...good, d: { echo: 256 } })],
    ['a type that is not listed', forge({ ...good, d: { nope: 1 } })],
    ['other filters', forge({ ...good, q: { s: 'queued', a: '2026-01-01T00:00:00.000Z' } })],
    ['fewer filters', forge({ ...good, q: { s: 'failed' } })],
    ['a boundary before createdAfter', forge({ ...good, k: '2025-03-01T00:00:05.000Z#job-5' })],
  ];
  it.each(bad)('rejects %s with 400 invalid_cursor', (_name, raw) => {
    let error: unknown;
    try {
      decodeCursor(raw, filter, sources);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).code).toBe('invalid_cursor');
    expect((error as ValidationError).issues?.[0]?.path).toBe('cursor');
  });
});

describe('mergePage', () => {
  const src = (type: string, shard: number) => {
    const source = listSources({ type }, [type])[shard];
    if (!source) throw new Error(`no shard ${shard}`);
    return source;
  };
  const entry = (id: string, second: number): IndexEntry => {
    const job = summary(id, 'echo', T0 + second * 1000);
    return { sortKey: keys.created(job.createdAt, id), summary: job };
  };

  it('merges partitions newest first and cuts at the limit', () => {
    const { items, next } = mergePage({
      fetched: [
        { source: src('echo', 0), page: { entries: [entry('a', 9), entry('b', 5), entry('c', 1)], more: false } },
        { source: src('echo', 1), page: { entries: [entry('d', 8), entry('e', 2)], more: false } },
      ],
      limit: 3,
    });
    expect(items.map((i) => i.id)).toEqual(['a', 'd', 'b']);
    expect(next?.boundary).toBe(entry('b', 5).sortKey);
    expect(next?.done).toEqual({}); // both partitions still have unreturned entries
  });

  it('marks drained partitions done and returns no cursor at the end', () => {
    const first = mergePage({
      fetched: [
        { source: src('echo', 0), page: { entries: [entry('a', 9)], more: false } },
        { source: src('echo', 1), page: { entries: [entry('d', 8), entry('e', 2)], more: false } },
      ],
      limit: 2,
    });
    expect(first.items.map((i) => i.id)).toEqual(['a', 'd']);
    expect(first.next?.done).toEqual({ echo: 0b1 });
    const last = mergePage({
      fetched: [{ source: src('echo', 1), page: { entries: [entry('e', 2)], more: false } }],
      limit: 2,
      ...(first.next ? { cursor: first.next } : {}),
    });
    expect(last.items.map((i) => i.id)).toEqual(['e']);
    expect(last.next).toBeNull();
  });

  it('never reads past the last fetched entry of a partition that has more', () => {
    const { items, next } = mergePage({
      fetched: [
        { source: src('echo', 0), page: { entries: [entry('a', 9), entry('b', 7)], more: true } },
        { source: src('echo', 1), page: { entries: [entry('d', 8), entry('e', 2)], more: false } },
      ],
      limit: 10,
      visible: (s) => s.id !== 'a',
    });
    // 'e' (second 2) is older than partition 0's last fetched entry (second 7): partition 0 may
    // hold unfetched entries between them, so 'e' waits for the next page.
    expect(items.map((i) => i.id)).toEqual(['d', 'b']);
    expect(next?.boundary).toBe(entry('b', 7).sortKey);
  });
});

describe('ListService pagination', () => {
  function dataset(seed: number, count: number, types = ['echo', 'flaky', 'sleep']): MemoryJobIndex {
    const random = rng(seed);
    const index = new MemoryJobIndex();
    for (let i = 0; i < count; i++) {
      const type = types[Math.floor(random() * types.length)] as string;
      // Many jobs share a millisecond: the id breaks ties.
      const created = T0 + Math.floor(random() * count * 10);
      const states: JobState[] = ['queued', 'running', 'succeeded', 'failed'];
      index.add(summary(`job-${i}`, type, created, states[Math.floor(random() * states.length)] as JobState));
    }
    return index;
  }

  it.each([
    { seed: 1, count: 45, limit: 20 },
    { seed: 2, count: 200, limit: 7 },
    { seed: 3, count: 10, limit: 100 },
    { seed: 4, count: 101, limit: 1 },
  ])('walks $count jobs in pages of $limit: newest first, no duplicates, no gaps', async ({ seed, count, limit }) => {
    const index = dataset(seed, count);
    const { pages } = await walk(service(index), { limit: String(limit) });
    const all = pages.flat();
    expect(all.map((j) => j.id)).toEqual(newestFirst(index.jobs).map((j) => j.id));
    for (const page of pages.slice(0, -1)) expect(page).toHaveLength(limit);
  });

  it('filters by type and state from the right index', async () => {
    const index = dataset(5, 120);
    const list = service(index);
    const { pages } = await walk(list, { type: 'flaky', state: 'failed', limit: '9' });
    const want = newestFirst(index.jobs.filter((j) => j.type === 'flaky' && j.state === 'failed'));
    expect(pages.flat().map((j) => j.id)).toEqual(want.map((j) => j.id));
    expect(
      index.queries.every((q) => q.partition.index === 'byTypeState' && q.partition.key.startsWith('flaky#failed#')),
    ).toBe(true);
  });

  it('filters by createdAfter (inclusive) and createdBefore (exclusive)', async () => {
    const index = dataset(6, 150);
    const after = new Date(T0 + 300).toISOString();
    const before = new Date(T0 + 900).toISOString();
    const { pages } = await walk(service(index), { createdAfter: after, createdBefore: before, limit: '11' });
    const want = newestFirst(index.jobs.filter((j) => j.createdAt >= after && j.createdAt < before));
    expect(want.length).toBeGreaterThan(20);
    expect(pages.flat().map((j) => j.id)).toEqual(want.map((j) => j.id));
  });

  it('accepts times with an offset and normalises them', async () => {
    const index = dataset(7, 50);
    const page = await service(index).list({ createdBefore: '2026-03-01T02:00:00+02:00' });
    expect(page.items).toEqual([]); // 00:00Z is T0: nothing was created before it
  });

  it('stays exact when DynamoDB returns short pages', async () => {
    const random = rng(9);
    const index = new MemoryJobIndex(() => 0.2 + random() * 0.8);
    const source = dataset(8, 180);
    for (const job of source.jobs) index.add(job);
    const { pages } = await walk(service(index), { limit: '13' });
    expect(pages.flat().map((j) => j.id)).toEqual(newestFirst(index.jobs).map((j) => j.id));
  });

  it('does not show jobs created after the first page on later pages', async () => {
    const index = dataset(10, 60);
    const list = service(index);
    const first = await list.list({ limit: '10' });
    index.add(summary('newcomer', 'echo', T0 + 10_000_000));
    const rest = await walk(list, { limit: '10', ...(first.nextCursor ? { cursor: first.nextCursor } : {}) });
    const ids = [...first.items, ...rest.pages.flat()].map((j) => j.id);
    expect(ids).not.toContain('newcomer');
    expect(ids).toEqual(newestFirst(index.jobs.filter((j) => j.id !== 'newcomer')).map((j) => j.id));
  });

  it('hides finished jobs past their retention, without gaps', async () => {
    const now = T0 + 40 * 86_400_000;
    const index = dataset(11, 90);
    for (const [i, job] of index.jobs.entries()) {
      if (i % 3 === 0) job.finishedAt = new Date(T0 + 1000).toISOString(); // 40 days ago: past 30 days
      if (i % 3 === 1) job.finishedAt = new Date(now - 1000).toISOString();
    }
    const { pages } = await walk(service(index, undefined, new ManualClock(now)), { limit: '8' });
    const want = newestFirst(index.jobs.filter((_, i) => i % 3 !== 0));
    expect(pages.flat().map((j) => j.id)).toEqual(want.map((j) => j.id));
  });

  it('skips partitions the cursor marks done', async () => {
    const index = new MemoryJobIndex();
    index.add(summary('only-one', 'echo', T0));
    for (let i = 0; i < 30; i++) index.add(summary(`s-${i}`, 'sleep', T0 + 1000 + i));
    const list = service(index, ['echo', 'sleep']);
    const first = await list.list({ limit: '5' });
    index.queries.length = 0;
    await list.list({ limit: '5', ...(first.nextCursor ? { cursor: first.nextCursor } : {}) });
    // Page 1 drained the 7 empty echo shards; only the shard holding the (oldest) echo job is read again.
    const echoQueries = index.queries.filter((q) => q.partition.key.startsWith('echo#'));
    expect(echoQueries.map((q) => q.partition.key)).toEqual([keys.byType('echo', 'only-one')]);
  });

  it('rejects an unknown type filter with 400 unknown_type, and createdBefore not after createdAfter', async () => {
    const list = service(new MemoryJobIndex());
    await expect(list.list({ type: 'nope' })).rejects.toMatchObject({ status: 400, code: 'unknown_type' });
    await expect(
      list.list({ createdAfter: '2026-03-01T00:00:00Z', createdBefore: '2026-03-01T00:00:00Z' }),
    ).rejects.toMatchObject({ status: 400, code: 'validation_failed' });
  });

  it('rejects a cursor of another query with 400 invalid_cursor', async () => {
    const index = dataset(12, 40);
    const list = service(index);
    const page = await list.list({ limit: '5', type: 'echo' });
    await expect(list.list({ limit: '5', type: 'sleep', cursor: page.nextCursor ?? '' })).rejects.toMatchObject({
      code: 'invalid_cursor',
    });
  });
});
