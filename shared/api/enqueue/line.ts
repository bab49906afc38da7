/**
 * A new job of a type with a ranked line (priorities, or a limit shared fairly), due now, takes
 * its place at enqueue (`lineAtEnqueue`): the take and the join its first delivery would make
 * (`FlowSlots.acquire`, for no attempt yet: token 0), made by the enqueue request itself. A place
 * free and nobody in line: the job holds it, as a job handed a place does, and its message
 * starts it. It has to wait: it joins the line, is sent no message, and does what a job that
 * joins on delivery does (shared/dispatch/line-keeper.ts, `look`): the first in line looks at the
 * holders and frees the places of those that will never give them back, and any job that sees a
 * free place hands it on. The holder that frees a place sends the job its message.
 *
 * So the queue carries about as many of the type's messages as it has places, and a backlog
 * waits in its line, ranked and shared fairly, not in the queue ahead of other tenants' messages
 * and of the messages that start the jobs handed a place.
 *
 * Costs, against sending the job and taking its place on delivery: a place free, 1 write unit
 * more (the take at enqueue, then its attempt's take-over of it, in place of one take); a job
 * that waits, the same writes (the refused take, the join's transaction, `waitingFor`, the
 * admission), and no message sent, received and deleted until it is handed a place.
 */
import type { Slot } from '../../core/flow';
import type { Job } from '../../core/job';
import { enqueueLineWait, lineAtEnqueue } from '../../core/job-slots';
import { errorFields } from '../../logger';
import type { EnqueueContext } from './deps';

/** What the enqueue did with the job's place: holds `slot` (send it, and give it back if the send fails), or waits in line (send nothing). */
export type PlaceAtEnqueue = { kind: 'held'; slot: Slot } | { kind: 'joined' };

/**
 * Takes the job's place at enqueue, or joins its line; undefined when it did neither (a type or
 * a job it does not apply to, or a failure: the job is then sent, and its delivery takes its
 * place or joins, finding what a take or a join whose answer was lost wrote).
 */
export async function placeAtEnqueue(ctx: EnqueueContext, job: Job, now: number): Promise<PlaceAtEnqueue | undefined> {
  const { flow } = ctx.deps;
  const { keeper } = ctx;
  const spec = ctx.specs.get(job.type);
  const line = flow && keeper && spec ? lineAtEnqueue(spec, job, now) : undefined;
  if (!flow || !keeper || !line) return undefined;
  // as the worker's: every line of this job's place (a hand-on it makes, a holder it frees) names it
  const log = ctx.deps.log.child({ jobId: job.id });
  const { slot, rank } = line;
  const where = { scope: slot.scope, key: slot.key };
  try {
    // the jobs of a batch that join one line take turns (at once, their transactions refuse each
    // other), and those that gather meanwhile join together
    const got = await keeper.placeInTurn({ slot, jobId: job.id, type: job.type, now, token: 0, rank });
    if (got.kind === 'held' && !got.fresh) {
      // The job already holds a place: a replay of this request sent it and its attempt took one
      // (or it was handed one), or an earlier try of this take applied with its answer lost. The
      // place is not one this enqueue may give back: the job is sent as any other, and its
      // delivery finds what it holds.
      log.info('found its place already held at enqueue; the job is sent to its queue', where);
      return undefined;
    }
    if (got.kind === 'held') {
      log.info('took a place at enqueue', where);
      return { kind: 'held', slot };
    }
    if (got.kind !== 'waiting') return undefined;
    const waitingFor = enqueueLineWait(line, now);
    // refused: the job changed meanwhile (cancelled, say): its view says what it is now
    if (await ctx.deps.store.markWaiting?.({ job, waitingFor }).catch(() => false)) job.waitingFor = waitingFor;
    // as the worker logs a job that joins on its delivery
    log.info('waiting for a concurrency slot', { ...where, rank, at: 'enqueue' });
    // as a job that joins on its delivery: the first in line looks at the holders, and a free place is handed on
    await keeper.look(slot, got, job.id, log);
    return { kind: 'joined' };
  } catch (error) {
    // a look that failed may have left a place nobody hands on: the job's delivery looks again
    log.warn('could not take a place at enqueue; the job is sent to its queue', { ...where, ...errorFields(error) });
    return undefined;
  }
}

/**
 * A job that took its place at enqueue and whose message could not be sent gives the place back,
 * and the place is handed on: it would be held by a job with no message, and the jobs in line
 * behind it have none either. Only the place taken at enqueue (token 0): a delivery of a message
 * sent after all (its answer lost) that took it over keeps it. Failures are logged: a job in line
 * frees the place once it may no longer be taken (after the wake's grace), or the supervisor
 * sends the job.
 */
export async function giveBackPlace(ctx: EnqueueContext, jobId: string, slot: Slot): Promise<void> {
  const { flow } = ctx.deps;
  if (!flow || !ctx.keeper) return;
  const log = ctx.deps.log.child({ jobId });
  try {
    if (await flow.release({ slot, jobId, token: 0 })) {
      log.info('gave back a concurrency slot', { scope: slot.scope, key: slot.key, holder: jobId });
    }
    await ctx.keeper.admit(slot, log);
  } catch (error) {
    log.warn('could not give back the place of a job whose message was not sent', errorFields(error));
  }
}
