import type { z } from 'zod';
import { enqueueRequestSchema } from '../core/enqueue';
import type { JobView } from '../core/job';
import { parseOrThrow } from '../core/validation';
import { OrreryError } from '../errors';
import { errorFields, type Logger } from '../logger';
import { mapWithConcurrency } from './concurrency';
import type { JobsService, PendingSend } from './jobs-service';
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

/** The group keys (`id:<id>`) of an item's parents that are jobs of the same batch, itself left out. */
function batchParents(item: unknown, groups: ReadonlyMap<string, number[]>): string[] {
  if (item === null || typeof item !== 'object') return [];
  const { id, dependsOn } = item as { id?: unknown; dependsOn?: unknown };
  if (!Array.isArray(dependsOn)) return [];
  return dependsOn.flatMap((ref: unknown) => {
    const parent =
      typeof ref === 'string'
        ? ref
        : ref !== null && typeof ref === 'object' && typeof (ref as { id?: unknown }).id === 'string'
          ? (ref as { id: string }).id
          : undefined;
    return parent !== undefined && parent !== id && groups.has(`id:${parent}`) ? [`id:${parent}`] : [];
  });
}

/** The error of a batch item on a cycle of `dependsOn` within the batch: nothing of it is written. */
function cycleError(index: number): z.output<typeof errorBodySchema> {
  return {
    code: 'flow_cycle',
    message: 'this job is on a cycle of dependsOn within the batch (or waits for one that is); it was not written',
    issues: [{ path: 'dependsOn', message: `item ${index} waits, through the batch, for itself` }],
  };
}

/**
 * `POST /jobs/batch`: each job is validated, deduplicated and written on its own through
 * {@link JobsService.write}, at most {@link BATCH_CONCURRENCY} at a time, so one bad or
 * conflicting job never hides which others were accepted. Jobs that share an id run one after
 * the other in batch order (the first creates, the next ones replay or conflict). The SQS
 * messages of the batch are then sent together ({@link JobsService.sendPending}: ≤ 10 per
 * SendMessageBatch); a job whose message failed is reported as an error item, as a single
 * enqueue whose send failed answers 503 (its job stays stored: a replay or the supervisor
 * dispatches it).
 */
export class BatchService {
  constructor(private readonly deps: { jobs: JobsService; log: Logger }) {}

  async enqueueAll(
    items: readonly unknown[],
    requestId: string,
    by?: string,
  ): Promise<z.output<typeof batchResponseSchema>> {
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
    const pending: { index: number; send: PendingSend }[] = [];
    // Jobs whose parents (`dependsOn`) are in the batch are written after them, wave by wave: a
    // child is registered with parents that exist (none is sent before the batch's writes end).
    let waiting = [...groups.entries()];
    const written = new Set<string>();
    while (waiting.length > 0) {
      const ready = waiting.filter(([, indexes]) =>
        indexes.every((i) => batchParents(items[i], groups).every((parent) => written.has(parent))),
      );
      if (ready.length === 0) {
        for (const [, indexes] of waiting) {
          for (const index of indexes) results[index] = { index, status: 'error', error: cycleError(index) };
        }
        break;
      }
      await mapWithConcurrency(ready, BATCH_CONCURRENCY, async ([, indexes]) => {
        for (const index of indexes) {
          const { result, send } = await this.one(items[index], index, requestId, by);
          results[index] = result;
          if (send) pending.push({ index, send });
        }
      });
      for (const [key] of ready) written.add(key);
      const done = new Set(ready.map(([key]) => key));
      waiting = waiting.filter(([key]) => !done.has(key));
    }
    const failures = await this.deps.jobs.sendPending(pending.map((p) => p.send));
    failures.forEach((error, n) => {
      const index = (pending[n] as { index: number }).index;
      // A later item of the same id may have sent the message: an error stays an error for
      // this item anyway, so that nothing is reported as dispatched that may not be.
      if (error) results[index] = { index, status: 'error', error: this.itemError(error, index, requestId) };
    });
    return { results };
  }

  private async one(
    item: unknown,
    index: number,
    requestId: string,
    by?: string,
  ): Promise<{ result: ItemResult; send?: PendingSend }> {
    try {
      const raw = await this.deps.jobs.withUploadedPayload(item);
      const request = parseOrThrow(enqueueRequestSchema, raw, { message: 'invalid enqueue request' });
      const { created, job, send } = await this.deps.jobs.write(request, by !== undefined ? { by } : {});
      return {
        result: { index, status: created ? 'created' : 'existing', job: summary(job) },
        ...(send ? { send } : {}),
      };
    } catch (error) {
      return { result: { index, status: 'error', error: this.itemError(error, index, requestId) } };
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
