/**
 * The one hand-off: runs the plan of shared/core/hand-off.ts for a job, through its type's queue
 * (an SQS send, or a visibility change of the message the caller holds) or a one-time schedule.
 * Every function that hands a job on calls it: the API (which batches its sends through
 * {@link dispatchOrPend}), the release, the supervisor, the control and signal calls, the worker.
 */
import { type QueueNaming, type Route, routeOf } from '../config';
import { type HandOff, planHandOff } from '../core/hand-off';
import { type Job, type JobMessage, jobMessage } from '../core/job';
import { type GroupedJob, messageGroupOf } from '../core/message-group';
import type { JobQueue, JobScheduler } from '../core/ports';
import { errorFields, type Logger } from '../logger';

/** What a hand-off needs: the queues of every job type and, to make schedules, a scheduler. */
export interface DispatchDeps {
  queue: JobQueue;
  /** @default no schedules: a far runAt is sent with SQS's longest delay, and hidden again when it comes early */
  scheduler?: JobScheduler | undefined;
  routes: Readonly<Record<string, Route>>;
  /** The deployment's queue naming: a job of a type not in `routes` is sent by it. @default only `routes` */
  queues?: QueueNaming | undefined;
  /**
   * The job types whose SQS messages carry a `MessageGroupId` (`fairQueueTypes` of the specs the
   * caller knows): a message of such a type is sent in its job's group (`messageGroupOf`).
   * @default none: no message carries a group (a caller that knows no spec, as the supervisor)
   */
  fairQueues?: ReadonlySet<string> | undefined;
}

/**
 * The job handed on: its message (`jobMessage`), when it is due (its runAt: @default now) and the
 * keys that name its SQS message group (@default none: a caller that holds only the message sends
 * it without a group).
 */
export type DispatchJob = Pick<Job, 'id' | 'type'> &
  Omit<GroupedJob, 'type'> & { runAt?: string; after?: string | undefined };

export interface DispatchOptions {
  /** When the job is due (epoch ms): `now` for a job handed on at once whatever its runAt. @default the job's runAt */
  runAt?: number;
  /**
   * The job's message the caller holds (the worker): it is hidden until runAt rather than a new
   * one sent. When hiding it fails, a new message is sent. @default none
   */
  received?: { queueUrl: string; receiptHandle: string };
  /**
   * The name of a schedule, when one is made. With a held message, a schedule is made only under
   * a name given here (a retry's or a wake's: the job id names a delayed job's schedule).
   * @default the job id; with a held message, no schedule
   */
  scheduleName?: string | undefined;
  /** Where a held message's fallbacks are logged. @default not logged */
  log?: Logger;
  /** What is handed on, for those log lines (`retry`, `sleep wait`). @default 'hand-off' */
  what?: string;
  /** Wraps the schedule and send of a held message (the worker tries them again on throttling). @default each call is made once */
  persist?: <T>(write: () => Promise<T>, what: string) => Promise<T>;
}

/** An SQS send still to make: the API batches them (SendMessageBatch). */
export interface QueueSend {
  queueUrl: string;
  message: JobMessage;
  delaySeconds?: number;
  /** Its `MessageGroupId`, for a job of a type in `fairQueues` that has one. @default none */
  groupId?: string;
}

/**
 * Hands `job` on at `now`: a (delayed) SQS message, its held message hidden until runAt, or a
 * one-time schedule. With a held message it answers `retry` when that message was hidden (it
 * comes back), and `done` when a schedule or a new message replaced it. A schedule that fails
 * while a message is held is replaced by hiding the message (when it comes back early, the worker
 * hides it again; the supervisor covers a lost one); a hiding that fails (the message may be
 * gone) is replaced by a new message. Throws when the last resort fails, and for a job type with
 * no route.
 *
 * @example
 * await dispatch(deps, job, now); // an enqueue's, a release's hand-off
 * await dispatch(deps, job, now, { runAt: now }); // at once, whatever the job's runAt
 * return dispatch(deps, job, now, { runAt, received, scheduleName, log, what: 'retry', persist });
 */
export async function dispatch(
  deps: DispatchDeps,
  job: DispatchJob,
  now: number,
  options: DispatchOptions = {},
): Promise<'retry' | 'done'> {
  const route = routeFor(deps, job);
  const named = !options.received || options.scheduleName !== undefined;
  const plan = planOf(job, now, options, deps.scheduler !== undefined && named);
  const persist = options.persist ?? once;
  const what = options.what ?? 'hand-off';
  if (plan.kind === 'schedule') {
    if (!options.received) {
      await schedule(deps, route, job, plan);
      return 'done';
    }
    try {
      await persist(() => schedule(deps, route, job, plan), `scheduling the ${what}`);
      return 'done';
    } catch (error) {
      options.log?.warn(`could not schedule the ${what}; the message waits for it instead`, errorFields(error));
    }
    return await keep(deps, route, job, now, options, planOf(job, now, options, false));
  }
  if (plan.kind === 'keep') return await keep(deps, route, job, now, options, plan);
  await send(deps, sendOf(deps, route, job, plan));
  return 'done';
}

/** Hands `job` on at once, whatever its runAt: a message with no delay. */
export function dispatchNow(deps: DispatchDeps, job: DispatchJob, now: number): Promise<'retry' | 'done'> {
  return dispatch(deps, job, now, { runAt: now });
}

/**
 * The hand-off's deps from a deployment's config: its routes and queue naming, the queue client,
 * to make schedules a scheduler, and the types whose messages carry a group (`fairQueueTypes`).
 */
export function handOffOf(
  config: { routes: Readonly<Record<string, Route>>; queues?: QueueNaming | undefined },
  queue: JobQueue,
  scheduler?: JobScheduler,
  fairQueues?: ReadonlySet<string>,
): DispatchDeps {
  return {
    queue,
    routes: config.routes,
    queues: config.queues,
    ...(scheduler ? { scheduler } : {}),
    ...(fairQueues ? { fairQueues } : {}),
  };
}

/**
 * The hand-off of a caller that batches its SQS sends (the API's enqueue, batch and flow
 * requests): makes the schedule a far job needs, or returns the send to make.
 */
export async function dispatchOrPend(
  deps: DispatchDeps,
  job: DispatchJob,
  now: number,
  options: Pick<DispatchOptions, 'runAt' | 'scheduleName'> = {},
): Promise<QueueSend | undefined> {
  const route = routeFor(deps, job);
  const plan = planOf(job, now, options, deps.scheduler !== undefined);
  if (plan.kind === 'schedule') {
    await schedule(deps, route, job, plan);
    return undefined;
  }
  return sendOf(deps, route, job, plan);
}

const once = <T>(write: () => Promise<T>): Promise<T> => write();

function routeFor(deps: DispatchDeps, job: DispatchJob): Route {
  const route = routeOf(deps, job.type);
  if (!route) throw new Error(`job type "${job.type}" has no route: job ${job.id} cannot be sent`);
  return route;
}

function planOf(job: DispatchJob, now: number, options: DispatchOptions, scheduler: boolean): HandOff {
  return planHandOff({
    runAt: options.runAt ?? (job.runAt === undefined ? now : Date.parse(job.runAt)),
    now,
    scheduler,
    received: options.received !== undefined,
    scheduleName: options.scheduleName ?? job.id,
  });
}

/** The held message, hidden for the plan's seconds (`retry`); when that fails, a new message (`done`). */
async function keep(
  deps: DispatchDeps,
  route: Route,
  job: DispatchJob,
  now: number,
  options: DispatchOptions,
  plan: HandOff,
): Promise<'retry' | 'done'> {
  const what = options.what ?? 'hand-off';
  if (plan.kind !== 'keep' || !options.received) throw new Error(`no held message of job ${job.id} to keep`);
  const { queueUrl, receiptHandle } = options.received;
  try {
    await deps.queue.changeVisibility(queueUrl, receiptHandle, plan.visibilitySeconds);
    return 'retry';
  } catch (error) {
    // A new message carrying the delay, so the job cannot be lost; a spare copy is harmless.
    options.log?.warn(`could not set the ${what} delay on the message; sending a new one`, errorFields(error));
    const fresh = sendOf(deps, route, job, planOf(job, now, { ...options, received: undefined }, false));
    await (options.persist ?? once)(() => send(deps, fresh), `sending the ${what} message`);
    return 'done';
  }
}

function sendOf(deps: DispatchDeps, route: Route, job: DispatchJob, plan: HandOff): QueueSend {
  const delaySeconds = plan.kind === 'send' ? plan.delaySeconds : undefined;
  const groupId = deps.fairQueues?.has(job.type) ? messageGroupOf(job) : undefined;
  return {
    queueUrl: route.queueUrl,
    message: jobMessage(job),
    ...(delaySeconds ? { delaySeconds } : {}),
    ...(groupId === undefined ? {} : { groupId }),
  };
}

async function send(deps: DispatchDeps, send: QueueSend): Promise<void> {
  await deps.queue.send(send.queueUrl, send.message, send.delaySeconds, send.groupId);
}

async function schedule(
  deps: DispatchDeps,
  route: Route,
  job: DispatchJob,
  plan: Extract<HandOff, { kind: 'schedule' }>,
): Promise<void> {
  if (!deps.scheduler) throw new Error(`no scheduler to hand job ${job.id} on with`);
  await deps.scheduler.scheduleJob({
    name: plan.name,
    fireAt: plan.fireAt,
    queueArn: route.queueArn,
    // it may fire ahead of runAt: the worker hides the message until then without a refused claim.
    // No group: whether Scheduler's SQS target passes a MessageGroupId to a standard queue is not
    // verified (docs/flow-control.md, "SQS fair queues").
    message: jobMessage(job, { notBefore: plan.notBefore }),
  });
}
