/**
 * A new job of a type with a ranked line (priorities, or a limit shared fairly), due now, takes
 * its place at enqueue (`lineAtEnqueue`, `FlowSlots.enterAtEnqueue`): it holds a place that is
 * free while nobody waits, and its message starts it as a job handed a place; or, every place
 * held, it joins the line and is sent no message: the holder that frees a place hands it on and
 * sends it one, as for a job that joined on its first delivery. So the queue carries about as
 * many of the type's messages as it has places, and a backlog waits in its line, ranked and
 * shared fairly, not in the queue ahead of other tenants' messages and of the messages that
 * start the jobs handed a place.
 *
 * Costs, against sending the job and taking its place on delivery: a place free, 1 write unit
 * more (the take at enqueue, then its attempt's take-over of it, in place of one take); every
 * place held, the same writes (the refused take, the join's transaction, `waitingFor`, the
 * admission), and no message sent, received and deleted until it is handed a place.
 */

import type { Job } from '../../core/job';
import { enqueueLineWait, lineAtEnqueue } from '../../core/job-slots';
import { errorFields } from '../../logger';
import type { EnqueueContext } from './deps';

/**
 * Takes the job's place at enqueue, or joins its line; true when it joined (send it nothing).
 * Any failure sends the job: a take or a join whose answer was lost is found by its delivery
 * (it holds the place, or waits under its entry), and a `waitingFor` that could not be written
 * only costs its deliveries a write.
 */
export async function joinedAtEnqueue(ctx: EnqueueContext, job: Job, now: number): Promise<boolean> {
  const { flow, log } = ctx.deps;
  const spec = ctx.specs.get(job.type);
  const line = flow && spec ? lineAtEnqueue(spec, job, now) : undefined;
  if (!flow || !line) return false;
  const { slot, rank } = line;
  const where = { jobId: job.id, scope: slot.scope, key: slot.key };
  let entered: 'held' | 'joined' | 'free';
  try {
    entered = await flow.enterAtEnqueue({ slot, jobId: job.id, type: job.type, rank, now });
  } catch (error) {
    log.warn('could not take a place at enqueue; the job is sent to its queue', { ...where, ...errorFields(error) });
    return false;
  }
  if (entered === 'held') log.info('took a place at enqueue', where);
  if (entered !== 'joined') return false;
  const waitingFor = enqueueLineWait(line, now);
  try {
    // refused: the job changed meanwhile (cancelled, say): its view says what it is now
    if (await ctx.deps.store.markWaiting?.({ job, waitingFor })) job.waitingFor = waitingFor;
  } catch (error) {
    log.warn('could not record why a job waits; it is in line all the same', { jobId: job.id, ...errorFields(error) });
  }
  // as the worker logs a job that joins on its delivery
  log.info('waiting for a concurrency slot', { ...where, rank, at: 'enqueue' });
  return true;
}
