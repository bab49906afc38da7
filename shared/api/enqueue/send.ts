/**
 * An enqueue's hand-off: the schedule of a far job is made at once, and the SQS send of a job
 * due within 15 minutes is returned to the caller (`PendingSend`), who sends it alone or batched
 * with the other jobs of its request (SendMessageBatch). A failed hand-off of a new job leaves it
 * stored: the caller may replay, or the supervisor sends it.
 */
import { needsRelease } from '../../core/dependencies';
import type { Slot } from '../../core/flow';
import type { Job } from '../../core/job';
import { dispatchOrPend, type QueueSend } from '../../dispatch/dispatch';
import { DependencyError, NotFoundError } from '../../errors';
import type { Logger } from '../../logger';
import type { EnqueueContext } from './deps';
import { giveBackPlace } from './line';

/** An SQS message an enqueue still has to send: see `JobsService.write`. */
export interface PendingSend extends QueueSend {
  /** The job was created by this request (a failed send is then reported as "stored, not dispatched"). */
  created: boolean;
  /** The place the job took at enqueue (./line.ts): given back and handed on when the send fails. */
  place?: Slot;
}

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

/**
 * Hands a job to Scheduler now, or returns the SQS send to make. Only a `scheduled` job is
 * scheduled (when still due after 15 minutes); any other is sent, with the delay left.
 */
export async function handOff(
  ctx: EnqueueContext,
  job: Job,
  now: number,
  created: boolean,
  runAt?: number,
): Promise<PendingSend | undefined> {
  const { config, queue, scheduler } = ctx.deps;
  if (!config.routes[job.type]) throw new NotFoundError(`job type ${job.type} is not deployed`);
  const via = {
    queue,
    routes: config.routes,
    fairQueues: ctx.fairQueues,
    ...(job.state === 'scheduled' ? { scheduler } : {}),
  };
  const send = await dispatchOrPend(via, job, now, runAt === undefined ? {} : { runAt });
  return send && { ...send, created };
}

/**
 * A job created finished (ended by a parent, skipped by its rate) with children registered at
 * its creation (a flow's): the send of its message, at once, whose worker finds it finished and
 * releases them. None for a job without children.
 */
export async function handOffEnded(
  ctx: EnqueueContext,
  job: Job,
  now: number,
  created: boolean,
): Promise<PendingSend | undefined> {
  if (!needsRelease(job)) return undefined;
  return handOff(ctx, job, now, created, now);
}

/** Sends one pending message, as {@link sendPending} would. */
export async function sendOne(ctx: EnqueueContext, send: PendingSend): Promise<void> {
  const { queueUrl, message, delaySeconds, groupId } = send;
  await ctx.deps.queue.send(queueUrl, message, delaySeconds, groupId).catch(async (error: unknown) => {
    if (send.place) await giveBackPlace(ctx, message.id, send.place);
    return throwSendFailure(ctx.deps.log, send, error);
  });
}

/**
 * Sends the messages `write` left pending, with as few SendMessageBatch calls as SQS allows.
 * Returns, in order, undefined for a message sent, or the error to report for its job (as an
 * enqueue would have thrown it).
 */
export async function sendPending(ctx: EnqueueContext, sends: readonly PendingSend[]): Promise<(Error | undefined)[]> {
  const { deps } = ctx;
  const results = new Array<Error | undefined>(sends.length);
  // the places of jobs whose message was not sent, given back and handed on
  const gaveBack: Promise<void>[] = [];
  const byQueue = new Map<string, number[]>();
  sends.forEach((send, i) => {
    byQueue.set(send.queueUrl, [...(byQueue.get(send.queueUrl) ?? []), i]);
  });
  await Promise.all(
    [...byQueue].map(async ([queueUrl, indexes]) => {
      const outcomes = await deps.queue
        .sendBatch(
          queueUrl,
          indexes.map((i) => {
            const send = sends[i] as PendingSend;
            return {
              message: send.message,
              ...(send.delaySeconds ? { delaySeconds: send.delaySeconds } : {}),
              ...(send.groupId === undefined ? {} : { groupId: send.groupId }),
            };
          }),
        )
        .catch((error: unknown) => indexes.map(() => ({ sent: false as const, error: asError(error) })));
      indexes.forEach((i, n) => {
        const outcome = outcomes[n];
        if (outcome?.sent) return;
        const error = outcome?.error ?? new DependencyError('SQS SendMessageBatch reported nothing for this message');
        const send = sends[i] as PendingSend;
        if (send.place) gaveBack.push(giveBackPlace(ctx, send.message.id, send.place));
        try {
          throwSendFailure(deps.log, send, error);
        } catch (e) {
          results[i] = asError(e);
        }
      });
    }),
  );
  await Promise.all(gaveBack);
  return results;
}

/** A new job's hand-off failed: it stays stored; the caller may replay, or the supervisor sends it. */
export function throwDispatchFailure(log: Logger, id: string, error: unknown): never {
  // The job stays. A concurrent replay of this request may have found it, dispatched it and
  // answered 200: deleting it now would lose an acknowledged job. Left undispatched, it is in
  // the due index, and the supervisor sends it once it is overdue (docs/architecture.md).
  const message = error instanceof Error ? error.message : String(error);
  log.error('could not dispatch a new job; it stays stored for a replay or the supervisor', {
    jobId: id,
    errorMessage: message,
  });
  throw new DependencyError(
    `job ${id} was stored but could not be handed to its queue (${message}). Send the same request ` +
      'again (same id) to dispatch it now; otherwise the supervisor dispatches it once it is overdue.',
    error,
    { jobId: id },
  );
}

function throwSendFailure(log: Logger, send: PendingSend, error: unknown): never {
  if (send.created) throwDispatchFailure(log, send.message.id, error);
  throw error;
}
