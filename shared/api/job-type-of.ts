import { JOB_ID_PATTERN } from '../core/enqueue';
import type { JobStore } from '../core/ports';
import { NotFoundError } from '../errors';

/**
 * The type of the job a route on `/jobs/{id}` acts on, for the access check of a caller whose
 * grant is scoped by type: one `GetItem` of the job item (strongly consistent: 1 read unit per
 * 4 KB of the item, its inline payload included), made before anything is written. A caller
 * granted every type never pays it. An unknown id answers 404, as the route would.
 */
export type JobTypeOf = (id: string) => Promise<readonly string[]>;

export function jobTypeOf(store: Pick<JobStore, 'get'>): JobTypeOf {
  return async (id) => {
    const job = JOB_ID_PATTERN.test(id) ? await store.get(id) : undefined;
    if (!job) throw new NotFoundError(`job ${JSON.stringify(id)} not found`, 'job_not_found');
    return [job.type];
  };
}
