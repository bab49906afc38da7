import type { z } from 'zod';
import { JOB_STATES, type JobState } from '../core/states';
import { ForbiddenError, NotFoundError, OrreryError } from '../errors';
import { mapWithConcurrency } from './concurrency';
import type { ControlActor, ControlService } from './control-service';
import type { bulkRequestSchema, bulkResultSchema } from './schemas';

/** Jobs of one bulk request handled at once (each is one conditional write, plus a send for a retry). */
export const BULK_CONCURRENCY = 8;

export type BulkRequest = z.output<typeof bulkRequestSchema>;
export type BulkResult = z.output<typeof bulkResultSchema>;

const isState = (value: unknown): value is JobState => JOB_STATES.includes(value as JobState);

export interface BulkServiceDeps {
  control: Pick<ControlService, 'cancel' | 'retry'>;
  /** @default {@link BULK_CONCURRENCY} */
  concurrency?: number;
}

/**
 * `POST /jobs/bulk`: `POST /jobs/{id}/cancel` or `/retry` for each id (1–100, unique, already
 * validated), at most {@link BULK_CONCURRENCY} at a time; one result per id, in order.
 *
 * A job the action applies to is `applied` (with its state after), one it does not apply to
 * (state, type not deployed) is `refused` (with its state), an unknown one `not_found`. Any other
 * error (throttling, a dependency failure) fails the whole request with that error (429/503):
 * some jobs may have been changed by then, and the request may be sent again: those answer
 * `refused` with the state the first request left them in.
 */
export class BulkService {
  constructor(private readonly deps: BulkServiceDeps) {}

  async apply(request: BulkRequest, actor: ControlActor = {}): Promise<{ results: BulkResult[] }> {
    const act = request.action === 'cancel' ? this.deps.control.cancel : this.deps.control.retry;
    const results = await mapWithConcurrency(
      request.ids,
      this.deps.concurrency ?? BULK_CONCURRENCY,
      async (id): Promise<BulkResult> => {
        try {
          const job = await act.call(this.deps.control, id, actor);
          return { id, status: 'applied', state: job.state };
        } catch (error) {
          if (error instanceof NotFoundError) return { id, status: 'not_found' };
          // the access check allowed its type, and the job changed type since (another job of the same id)
          if (error instanceof ForbiddenError) return { id, status: 'forbidden' };
          if (error instanceof OrreryError && error.status === 409) {
            const state = error.details?.state;
            return { id, status: 'refused', ...(isState(state) ? { state } : {}) };
          }
          throw error;
        }
      },
    );
    return { results };
  }
}
