import type { z } from 'zod';
import type { PlatformConfig } from '../config';
import type { Clock } from '../core/clock';
import type { DeadLetterQueues, IndexPage, JobIndex } from '../core/control-ports';
import { OVERVIEW_READ_PER_SHARD, overviewWindow, summarizeType } from '../core/overview';
import { keys, SHARD_COUNT } from '../core/table';
import { errorFields, type Logger } from '../logger';
import { mapWithConcurrency } from './concurrency';
import { LIST_QUERY_CONCURRENCY } from './list-service';
import type { overviewSchema } from './schemas';

/** DLQ depth requests (GetQueueAttributes) in flight at once. */
export const OVERVIEW_DLQ_CONCURRENCY = 8;

export interface OverviewServiceDeps {
  config: PlatformConfig;
  index: JobIndex;
  deadLetters: DeadLetterQueues;
  clock: Clock;
  log: Logger;
}

export type Overview = z.output<typeof overviewSchema>;

/**
 * `GET /overview`: per deployed type, the jobs created within the window counted by state, a
 * series of created / succeeded / failed per bucket, the oldest queued job's age (see
 * `core/overview.ts`), and the DLQ depth. Never a scan: per type, one `byType` Query of at most
 * {@link OVERVIEW_READ_PER_SHARD} entries per shard with its BatchGetItem of their states, and one
 * GetQueueAttributes of its DLQ.
 */
export class OverviewService {
  constructor(private readonly deps: OverviewServiceDeps) {}

  async overview(windowMinutes: number): Promise<Overview> {
    const now = this.deps.clock.now();
    const window = overviewWindow(now, windowMinutes);
    const atLeast = new Date(window.windowStart).toISOString();
    const types = Object.keys(this.deps.config.routes).sort();
    const sources = types.flatMap((type) => Array.from({ length: SHARD_COUNT }, (_, shard) => ({ type, shard })));
    const [pages, depths] = await Promise.all([
      mapWithConcurrency(sources, LIST_QUERY_CONCURRENCY, ({ type, shard }) =>
        this.deps.index.query({
          partition: { index: 'byType', key: keys.byTypeShard(type, shard) },
          atLeast,
          limit: OVERVIEW_READ_PER_SHARD,
        }),
      ),
      mapWithConcurrency(types, OVERVIEW_DLQ_CONCURRENCY, (type) => this.dlqDepth(type)),
    ]);
    const byType = new Map<string, IndexPage[]>();
    sources.forEach(({ type }, i) => {
      const list = byType.get(type) ?? [];
      list.push(pages[i] as IndexPage);
      byType.set(type, list);
    });
    return {
      generatedAt: new Date(now).toISOString(),
      windowStart: atLeast,
      bucketMs: window.bucketMs,
      types: types.map((type, i) =>
        summarizeType({ type, pages: byType.get(type) ?? [], window, now, dlqDepth: depths[i] ?? null }),
      ),
    };
  }

  /** ApproximateNumberOfMessages of the type's DLQ; null without a DLQ, or when SQS did not answer. */
  private async dlqDepth(type: string): Promise<number | null> {
    const url = this.deps.config.routes[type]?.dlqUrl;
    if (url === undefined) return null;
    try {
      return (await this.deps.deadLetters.depth(url)).visible;
    } catch (error) {
      this.deps.log.warn('could not read the DLQ depth for the overview', { type, ...errorFields(error) });
      return null;
    }
  }
}
