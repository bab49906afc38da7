import type { z } from 'zod';
import type { PlatformConfig } from '../config';
import type { Clock } from '../core/clock';
import type { IndexEntry, JobIndex, JobSummary } from '../core/control-ports';
import type { JobView } from '../core/job';
import {
  decodeCursor,
  encodeCursor,
  isDone,
  LIST_LIMIT_DEFAULT,
  LIST_LIMIT_MAX,
  type ListFilter,
  listSources,
  mergePage,
  sortKeyBounds,
} from '../core/list';
import { type PayloadCondition, payloadMatches } from '../core/payload-filter';
import { NotFoundError, ValidationError } from '../errors';
import { mapWithConcurrency } from './concurrency';
import type { JobsService } from './jobs-service';
import type { listQuerySchema } from './schemas';

/** Partition queries in flight at once for one page (8 per type). */
export const LIST_QUERY_CONCURRENCY = 16;
/**
 * A listing by a state that has no index of its own, or by payload, reads this many entries per
 * shard for each job it returns (at most {@link LIST_LIMIT_MAX}): such a page may hold fewer than
 * `limit` jobs, and `nextCursor` goes on from where it stopped.
 */
export const FILTERED_READ_FACTOR = 4;
/** Pages `latest` reads past hidden (expired) entries before giving up. */
const LATEST_MAX_PAGES = 5;

export interface ListServiceDeps {
  config: PlatformConfig;
  index: JobIndex;
  jobs: JobsService;
  clock: Clock;
}

export interface JobPage {
  items: JobSummary[];
  nextCursor: string | null;
}

const iso = (text: string) => new Date(Date.parse(text)).toISOString();

/** `GET /jobs` and `GET /types/{type}/latest`: newest first, from the GSIs, never a scan. */
export class ListService {
  constructor(private readonly deps: ListServiceDeps) {}

  /** Types the API can list: every deployed route. */
  deployedTypes(): string[] {
    return Object.keys(this.deps.config.routes).sort();
  }

  /**
   * Finished jobs past their retention are gone for callers, as in `GET /jobs/{id}`, even before
   * TTL deletes them. With a state filter, only jobs in that state as the table has it now (the
   * `byType` entries of a listing by a non-sparse state, or a lagging `byTypeState` entry).
   */
  private visible(
    now: number,
    state?: string,
    payload: readonly PayloadCondition[] = [],
  ): (summary: JobSummary, entry: IndexEntry) => boolean {
    const retentionMs = this.deps.config.retentionDays * 86_400_000;
    return (summary, entry) =>
      (state === undefined || summary.state === state) &&
      (summary.finishedAt === null || Date.parse(summary.finishedAt) + retentionMs > now) &&
      (payload.length === 0 || payloadMatches(entry.payload, payload));
  }

  /**
   * One page of `GET /jobs`. `payload`: conditions already validated by
   * `splitPayloadConditions`; they are checked on the job items the page reads anyway (an inline
   * payload costs nothing more; a payload in its own item, one more read of it).
   * @param payload - @default [] (no payload filter)
   */
  async list(query: z.output<typeof listQuerySchema>, payload: readonly PayloadCondition[] = []): Promise<JobPage> {
    if (query.type !== undefined && !this.deps.config.routes[query.type]) {
      throw new ValidationError(
        `unknown job type "${query.type}"`,
        [{ path: 'type', message: `must be one of: ${this.deployedTypes().join(', ')}` }],
        'unknown_type',
      );
    }
    const filter: ListFilter = {
      ...(query.type !== undefined ? { type: query.type } : {}),
      ...(query.state !== undefined ? { state: query.state } : {}),
      ...(query.createdAfter !== undefined ? { createdAfter: iso(query.createdAfter) } : {}),
      ...(query.createdBefore !== undefined ? { createdBefore: iso(query.createdBefore) } : {}),
      ...(payload.length > 0 ? { payload } : {}),
    };
    if (filter.createdAfter !== undefined && filter.createdBefore !== undefined) {
      if (filter.createdAfter >= filter.createdBefore) {
        throw new ValidationError('createdBefore must be later than createdAfter', [
          { path: 'createdBefore', message: 'must be later than createdAfter' },
        ]);
      }
    }
    const limit = query.limit !== undefined ? Number(query.limit) : LIST_LIMIT_DEFAULT;
    return this.page(filter, limit, query.cursor);
  }

  private async page(filter: ListFilter, limit: number, rawCursor: string | undefined): Promise<JobPage> {
    const sources = listSources(filter, this.deployedTypes());
    const cursor = rawCursor !== undefined ? decodeCursor(rawCursor, filter, sources) : undefined;
    const bounds = sortKeyBounds(filter, cursor);
    const active = sources.filter((source) => !isDone(cursor, source));
    // A state read from byType, or a payload filter, keeps only some entries: read more of each shard per page.
    const withPayload = (filter.payload?.length ?? 0) > 0;
    const filtered =
      withPayload || (filter.state !== undefined && sources.some((source) => source.partition.index === 'byType'));
    const perShard = filtered ? Math.min(LIST_LIMIT_MAX, limit * FILTERED_READ_FACTOR) : limit;
    const fetched = await mapWithConcurrency(active, LIST_QUERY_CONCURRENCY, async (source) => ({
      source,
      page: await this.deps.index.query({
        partition: source.partition,
        ...bounds,
        limit: perShard,
        ...(withPayload ? { withPayload } : {}),
      }),
    }));
    const { items, next } = mergePage({
      fetched,
      limit,
      visible: this.visible(this.deps.clock.now(), filter.state, filter.payload),
      ...(cursor ? { cursor } : {}),
    });
    return { items, nextCursor: next ? encodeCursor(filter, next) : null };
  }

  /** The newest job of `type` (404 `type_not_found` for a type that is not deployed, `job_not_found` if none). */
  async latest(type: string): Promise<JobView> {
    if (!this.deps.config.routes[type]) throw new NotFoundError(`job type "${type}" is not deployed`, 'type_not_found');
    let cursor: string | undefined;
    for (let i = 0; i < LATEST_MAX_PAGES; i++) {
      const page = await this.page({ type }, 1, cursor);
      const newest = page.items[0];
      if (newest) return this.deps.jobs.get(newest.id);
      if (page.nextCursor === null) break;
      cursor = page.nextCursor;
    }
    throw new NotFoundError(`no job of type "${type}" found`, 'job_not_found');
  }
}
