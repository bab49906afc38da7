/**
 * A new job that would only wait joins its line at enqueue: a job of a type with a ranked line
 * (priorities, or a limit shared fairly), due now, whose first slot has every place held
 * (`lineAtEnqueue`, `FlowSlots.joinWhenFull`). It is then sent no message: the holder that frees
 * a place hands it on and sends it one, as for a job that joined on its first delivery. So a
 * tenant's backlog waits in the line, ranked and shared fairly, and not in the queue, ahead of
 * other tenants' messages and of the messages that start the jobs handed a place.
 *
 * Costs, against sending the job and joining on its delivery: one read of the slot item (1 read
 * unit) for every due job of such a type; for a job that joins, the join's transaction (4 write
 * units) and its `waitingFor` (1), where its delivery would have paid a refused take (1), the same
 * join and the same `waitingFor`, plus its message's send, receive and delete.
 */

import type { Job } from '../../core/job';
import { enqueueLineWait, lineAtEnqueue } from '../../core/job-slots';
import { errorFields } from '../../logger';
import type { EnqueueContext } from './deps';

/**
 * Joins the job's line when every place of its first slot is held; true when it did (send it
 * nothing). Any failure sends the job instead: a join whose answer was lost leaves an entry its
 * delivery finds (it then waits under it), and a `waitingFor` that could not be written only
 * costs its deliveries a write.
 */
export async function joinedAtEnqueue(ctx: EnqueueContext, job: Job, now: number): Promise<boolean> {
  const { flow, log } = ctx.deps;
  const spec = ctx.specs.get(job.type);
  const line = flow && spec ? lineAtEnqueue(spec, job, now) : undefined;
  if (!flow || !line) return false;
  const { slot, rank } = line;
  try {
    if ((await flow.joinWhenFull({ slot, jobId: job.id, type: job.type, rank, now })) === 'free') return false;
  } catch (error) {
    log.warn('could not join the line at enqueue; the job is sent to its queue', {
      jobId: job.id,
      ...errorFields(error),
    });
    return false;
  }
  const waitingFor = enqueueLineWait(line, now);
  try {
    // refused: the job changed meanwhile (cancelled, say): its view says what it is now
    if (await ctx.deps.store.markWaiting?.({ job, waitingFor })) job.waitingFor = waitingFor;
  } catch (error) {
    log.warn('could not record why a job waits; it is in line all the same', { jobId: job.id, ...errorFields(error) });
  }
  // as the worker logs a job that joins on its delivery
  log.info('waiting for a concurrency slot', { jobId: job.id, scope: slot.scope, key: slot.key, rank, at: 'enqueue' });
  return true;
}
