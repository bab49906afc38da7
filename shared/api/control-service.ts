import type { PlatformConfig } from '../config';
import type { TypeScope } from '../core/access';
import type { Clock } from '../core/clock';
import { CANCELLABLE_STATES, pastRetention, RETRYABLE_STATES } from '../core/control';
import type { JobControl } from '../core/control-ports';
import { type JobGraph, needsRelease } from '../core/dependencies';
import { describeJob } from '../core/describe';
import { JOB_ID_PATTERN } from '../core/enqueue';
import { type Job, type JobView, toView } from '../core/job';
import type { JobTypeSpec } from '../core/job-type';
import { fairQueueTypes } from '../core/message-group';
import { type JobQueue, type JobScheduler, type JobStore, retryScheduleName, wakeScheduleName } from '../core/ports';
import type { JobState } from '../core/states';
import { dispatchNow } from '../dispatch/dispatch';
import { releaseDepsOf, releaseOrHandOff } from '../dispatch/release';
import { ConflictError, NotFoundError } from '../errors';
import { errorFields, type Logger } from '../logger';
import { scopeRefusal } from './access';

export interface ControlServiceDeps {
  config: PlatformConfig;
  catalog: readonly JobTypeSpec[];
  store: JobStore;
  control: JobControl;
  queue: JobQueue;
  scheduler: JobScheduler;
  clock: Clock;
  log: Logger;
  /** Job dependencies: a cancelled job's children are released by their policies. @default they are left waiting */
  graph?: JobGraph;
}

function illegalState(job: Pick<Job, 'id' | 'state'>, action: string, allowed: readonly JobState[]): ConflictError {
  return new ConflictError(
    `job ${job.id} is ${job.state}; only a job that is ${allowed.join(', ')} can be ${action}`,
    'illegal_state',
    { state: job.state, jobId: job.id },
  );
}

/** Who acts on a job through the API, and on which job types their grant lets them. */
export interface ControlActor {
  /** The caller's ARN: recorded on the job (`controls`) by the write. @default not recorded */
  by?: string;
  /**
   * The job types the caller's grant covers for this action. The write is conditioned on them,
   * so the access check's read of the job's type cannot be outrun (the job deleted and enqueued
   * again with another type in between): such a job is refused with a `ForbiddenError`.
   * @default every type
   */
  scope?: TypeScope;
}

/** The types a scope limits a write to (undefined: every type). */
function scopedTypes(scope: TypeScope | undefined): readonly string[] | undefined {
  if (!scope || scope.kind === 'all') return undefined;
  return scope.kind === 'some' ? [...scope.types] : [];
}

/** `POST /jobs/{id}/cancel` and `POST /jobs/{id}/retry`. */
export class ControlService {
  private readonly specs: Map<string, JobTypeSpec>;
  /** The catalog's types whose messages carry an SQS message group. */
  private readonly fairQueues: ReadonlySet<string>;

  constructor(private readonly deps: ControlServiceDeps) {
    this.specs = new Map(deps.catalog.map((spec) => [spec.type, spec]));
    this.fairQueues = fairQueueTypes(deps.catalog);
  }

  private notFound(id: string): NotFoundError {
    return new NotFoundError(`job ${JSON.stringify(id)} not found`, 'job_not_found');
  }

  /**
   * Cancels a job that has not finished. One conditional write on its state, with no read
   * before it; the item as it was comes back with the outcome. Then, for a job that was
   * scheduled (or retrying through a one-time schedule), the schedule is deleted (a message
   * that still arrives later is discarded by the worker, which treats a cancelled job as
   * finished). A running attempt's next fenced write (its heartbeat) fails, which aborts the
   * handler's signal; no retry follows.
   */
  async cancel(id: string, actor: ControlActor = {}): Promise<JobView> {
    if (!JOB_ID_PATTERN.test(id)) throw this.notFound(id);
    const { by } = actor;
    const types = scopedTypes(actor.scope);
    const now = this.deps.clock.now();
    const expiresAt = Math.floor(now / 1000) + this.deps.config.retentionDays * 86_400;
    const result = await this.deps.control.cancel({
      id,
      from: CANCELLABLE_STATES,
      now,
      expiresAt,
      ...(by !== undefined ? { by } : {}),
      ...(types !== undefined ? { types } : {}),
    });
    if (result.kind === 'missing') throw this.notFound(id);
    // A finished job past its retention is gone for callers, even before TTL deletes it.
    if (result.kind === 'refused' && pastRetention(result.job, now)) throw this.notFound(id);
    if (result.kind === 'refused') {
      const forbidden = scopeRefusal(actor, { action: 'control', control: 'cancel', types: [result.job.type] });
      if (forbidden) throw forbidden;
      await this.healRelease(result.job, now);
      throw illegalState(result.job, 'cancelled', CANCELLABLE_STATES);
    }

    const job = result.job;
    const log = this.deps.log.child({ jobId: id, type: job.type });
    // Best effort: a schedule left behind only sends a message the worker discards. A replay
    // (the first try applied, its response lost) does not know the state before: it tries both.
    const previous = result.previous;
    const schedules: string[] = [];
    if (!previous || previous.state === 'scheduled') schedules.push(id);
    if ((!previous || previous.state === 'retrying') && job.attempts > 0)
      schedules.push(retryScheduleName(id, job.attempts));
    // a long sleep or signal wait brings the job back through a schedule of its own
    if ((!previous || previous.state === 'waiting') && (job.resumes ?? 0) > 0)
      schedules.push(wakeScheduleName(id, job.resumes ?? 0));
    for (const name of schedules) {
      await this.deps.scheduler.deleteJobSchedule(name).catch((error: unknown) => {
        log.warn('could not delete the schedule of a cancelled job; its message will be discarded', {
          schedule: name,
          ...errorFields(error),
        });
      });
    }
    log.info('job cancelled', {
      ...(by !== undefined ? { by } : {}),
      previousState: previous?.state ?? 'unknown (replay)',
      ...describeJob(this.specs.get(job.type), job.payload),
    });
    // the job as the cancel left it says whether it has children: none, no read
    if (needsRelease(job)) await this.releaseCancelled(job, now, log);
    return toView(job);
  }

  /**
   * A refused cancel or retry found the job finished with its release not done (the call that
   * ended it died before it, and a job that waited, was scheduled or was cancelled while it
   * waited has no message to bring it back): the release is run here, before the 409, so a
   * client's retry of the call heals it. Never throws.
   */
  private async healRelease(job: Job, now: number): Promise<void> {
    if (!this.deps.graph || !needsRelease(job)) return;
    const log = this.deps.log.child({ jobId: job.id, type: job.type });
    log.warn('a finished job still had children to release; releasing them');
    await this.releaseCancelled(job, now, log);
  }

  /**
   * Releases a cancelled job's children by their policies, inline. When that fails, the job's
   * message is sent instead: its worker finds it finished and runs the release.
   */
  private async releaseCancelled(job: Job, now: number, log: Logger): Promise<void> {
    const graph = this.deps.graph;
    if (!graph) return;
    const deps = releaseDepsOf({
      config: this.deps.config,
      graph,
      queue: this.deps.queue,
      scheduler: this.deps.scheduler,
      fairQueues: this.fairQueues,
    });
    await releaseOrHandOff(deps, job, now, log);
  }

  /**
   * Retries a failed, cancelled (or expired) job of a deployed type as a new series of attempts:
   * one conditional write with no read before it (state queued, attempts 0, retries + 1, the
   * fencing token kept), then its message is sent. If the send fails, the write is undone (from
   * the item as it was, which the write returned) and the error returned, so the caller can retry.
   */
  async retry(id: string, actor: ControlActor = {}): Promise<JobView> {
    if (!JOB_ID_PATTERN.test(id)) throw this.notFound(id);
    const { by } = actor;
    const now = this.deps.clock.now();
    const scoped = scopedTypes(actor.scope);
    const deployed = Object.keys(this.deps.config.routes);
    const types = scoped === undefined ? deployed : deployed.filter((type) => scoped.includes(type));
    const result = await this.deps.control.restart({
      id,
      types,
      from: RETRYABLE_STATES,
      now,
      ...(by !== undefined ? { by } : {}),
    });
    if (result.kind === 'missing') throw this.notFound(id);
    if (result.kind === 'refused') {
      const job = result.job;
      if (pastRetention(job, now)) throw this.notFound(id);
      const forbidden = scopeRefusal(actor, { action: 'control', control: 'retry', types: [job.type] });
      if (forbidden) throw forbidden;
      await this.healRelease(job, now);
      if (!RETRYABLE_STATES.includes(job.state)) throw illegalState(job, 'retried', RETRYABLE_STATES);
      throw new ConflictError(`job type "${job.type}" is not deployed; job ${id} cannot run`, 'type_not_deployed', {
        jobId: id,
        state: job.state,
      });
    }
    const job = result.job;
    const log = this.deps.log.child({ jobId: id, type: job.type });
    try {
      // due at once (the restart's condition checked its type has a route)
      const via = { queue: this.deps.queue, routes: this.deps.config.routes, fairQueues: this.fairQueues };
      await dispatchNow(via, job, now);
    } catch (error) {
      // A replay (the first try applied, its response lost) has no state before to put back:
      // the retry stands, and the supervisor sends the job once it is overdue.
      const undone = result.previous
        ? await this.deps.control
            .undoRestart({ previous: result.previous, retries: job.retries ?? 1 })
            .catch(() => undefined)
        : false;
      log.error('could not send the message of a retried job', { undone: undone ?? 'unknown', ...errorFields(error) });
      // Refused: the restarted job moved on (another message of it was claimed), so the retry
      // took effect and stands; the supervisor re-sends it if it waits. Otherwise the caller
      // learns that nothing changed (undone) or must look (the undo's outcome is unknown).
      if (undone !== false) throw error;
      const current = await this.deps.store.get(id).catch(() => undefined);
      return toView(current ?? job);
    }
    log.info('job retried', {
      ...(by !== undefined ? { by } : {}),
      previousState: result.previous?.state ?? 'unknown (replay)',
      retries: job.retries,
      ...describeJob(this.specs.get(job.type), job.payload),
    });
    return toView(job);
  }
}
