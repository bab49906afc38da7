import type { z } from 'zod';
import { enqueueRequestSchema } from '../core/enqueue';
import type { JobView } from '../core/job';
import { parseOrThrow } from '../core/validation';
import { OrreryError } from '../errors';
import { errorFields, type Logger } from '../logger';
import { mapWithConcurrency } from './concurrency';
import type { JobsService } from './jobs-service';
import type { batchItemResultSchema, batchResponseSchema, errorBodySchema } from './schemas';

/** Enqueues of one batch in flight at once. */
export const BATCH_CONCURRENCY = 10;
/**
 * Largest `POST /jobs/batch` body: 5 MiB. A Function URL takes at most 6 MB per request
 * (the whole event, JSON-escaped body included), so 5 MiB leaves room for the envelope.
 */
export const MAX_BATCH_REQUEST_BYTES = 5 * 1024 * 1024;

type ItemResult = z.output<typeof batchItemResultSchema>;

function summary(job: JobView) {
  return {
    id: job.id,
    type: job.type,
    state: job.state,
    createdAt: job.createdAt,
    runAt: job.runAt,
    attempts: job.attempts,
    finishedAt: job.finishedAt,
  };
}

/**
 * `POST /jobs/batch`: each job is validated, deduplicated and written on its own through
 * {@link JobsService.enqueue}, at most {@link BATCH_CONCURRENCY} at a time, so one bad or
 * conflicting job never hides which others were accepted. Jobs that share an id run one after
 * the other in batch order (the first creates, the next ones replay or conflict).
 */
export class BatchService {
  constructor(private readonly deps: { jobs: JobsService; log: Logger }) {}

  async enqueueAll(items: readonly unknown[], requestId: string): Promise<z.output<typeof batchResponseSchema>> {
    const results = new Array<ItemResult>(items.length);
    const groups = new Map<string, number[]>();
    items.forEach((item, index) => {
      const id =
        item !== null && typeof item === 'object' && typeof (item as { id?: unknown }).id === 'string'
          ? (item as { id: string }).id
          : undefined;
      const key = id !== undefined ? `id:${id}` : `#${index}`;
      groups.set(key, [...(groups.get(key) ?? []), index]);
    });
    await mapWithConcurrency([...groups.values()], BATCH_CONCURRENCY, async (indexes) => {
      for (const index of indexes) results[index] = await this.one(items[index], index, requestId);
    });
    return { results };
  }

  private async one(item: unknown, index: number, requestId: string): Promise<ItemResult> {
    try {
      const request = parseOrThrow(enqueueRequestSchema, item, { message: 'invalid enqueue request' });
      const { created, job } = await this.deps.jobs.enqueue(request);
      return { index, status: created ? 'created' : 'existing', job: summary(job) };
    } catch (error) {
      return { index, status: 'error', error: this.itemError(error, index, requestId) };
    }
  }

  private itemError(error: unknown, index: number, requestId: string): z.output<typeof errorBodySchema> {
    if (error instanceof OrreryError && error.status < 500) return error.toJSON().error;
    if (error instanceof OrreryError && error.retryable) {
      this.deps.log.warn('batch item failed on a dependency', { requestId, index, ...errorFields(error) });
      return {
        code: error.code,
        message: 'a dependency of the API failed; send this job again with the same id',
        requestId,
      };
    }
    this.deps.log.error('batch item failed', { requestId, index, ...errorFields(error) });
    return { code: 'internal_error', message: 'internal error; see the logs for this request id', requestId };
  }
}
