import type { PlatformConfig } from '../config';
import type { Clock } from '../core/clock';
import { CANCELLABLE_STATES, RETRYABLE_STATES } from '../core/control';
import type { JobControl } from '../core/control-ports';
import { describeJob } from '../core/describe';
import { JOB_ID_PATTERN } from '../core/enqueue';
import { type Job, type JobMessage, type JobView, toView } from '../core/job';
import type { JobTypeSpec } from '../core/job-type';
import { type JobQueue, type JobScheduler, type JobStore, retryScheduleName } from '../core/ports';
import type { JobState } from '../core/states';
import { ConflictError, NotFoundError } from '../errors';
import { errorFields, type Logger } from '../logger';

export interface ControlServiceDeps {
  config: PlatformConfig;
  catalog: readonly JobTypeSpec[];
  store: JobStore;
  control: JobControl;
  queue: JobQueue;
  scheduler: JobScheduler;
  clock: Clock;
  log: Logger;
}

function illegalState(job: Pick<Job, 'id' | 'state'>, action: string, allowed: readonly JobState[]): ConflictError {
  return new ConflictError(
    `job ${job.id} is ${job.state}; only a job that is ${allowed.join(', ')} can be ${action}`,
    'illegal_state',
    { state: job.state, jobId: job.id },
  );
}

/** `POST /jobs/{id}/cancel` and `POST /jobs/{id}/retry`. */
export class ControlService {
  private readonly specs: Map<string, JobTypeSpec>;

  constructor(private readonly deps: ControlServiceDeps) {
    this.specs = new Map(deps.catalog.map((spec) => [spec.type, spec]));
  }

  /** The stored job, or 404 (also for a finished job past its retention that TTL has not deleted yet). */
  private async load(id: string): Promise<Job> {
    const notFound = () => new NotFoundError(`job ${JSON.stringify(id)} not found`, 'job_not_found');
    if (!JOB_ID_PATTERN.test(id)) throw notFound();
    const job = await this.deps.store.get(id);
    if (!job || (job.expiresAt !== undefined && job.expiresAt * 1000 < this.deps.clock.now())) throw notFound();
    return job;
  }

  /**
   * Cancels a job that has not finished. One conditional write on its state; then, for a
   * scheduled job, its one-time schedule is deleted (a message that still arrives later is
   * discarded by the worker, which treats a cancelled job as finished). A running attempt's
   * next fenced write (its heartbeat) fails, which aborts the handler's signal; no retry follows.
   */
  async cancel(id: string): Promise<JobView> {
    const job = await this.load(id);
    if (!CANCELLABLE_STATES.includes(job.state)) throw illegalState(job, 'cancelled', CANCELLABLE_STATES);
    const now = this.deps.clock.now();
    const expiresAt = Math.floor(now / 1000) + this.deps.config.retentionDays * 86_400;
    const result = await this.deps.control.cancel({
      id,
      type: job.type,
      from: CANCELLABLE_STATES,
      now,
      expiresAt,
    });
    if (result.kind === 'missing') throw new NotFoundError(`job ${JSON.stringify(id)} not found`, 'job_not_found');
    if (result.kind === 'refused') throw illegalState(result.job, 'cancelled', CANCELLABLE_STATES);

    const log = this.deps.log.child({ jobId: id, type: job.type });
    // Best effort: a schedule left behind only sends a message the worker discards.
    const schedules: string[] = [];
    if (job.state === 'scheduled') schedules.push(id);
    if (job.state === 'retrying' && job.attempts > 0) schedules.push(retryScheduleName(id, job.attempts));
    for (const name of schedules) {
      await this.deps.scheduler.deleteJobSchedule(name).catch((error: unknown) => {
        log.warn('could not delete the schedule of a cancelled job; its message will be discarded', {
          schedule: name,
          ...errorFields(error),
        });
      });
    }
    log.info('job cancelled', { previousState: job.state, ...describeJob(this.specs.get(job.type), job.payload) });
    return toView(result.job);
  }

  /**
   * Retries a failed, cancelled (or expired) job as a new series of attempts: one conditional
   * write (state queued, attempts 0, retries + 1, the fencing token kept), then its message is
   * sent. If the send fails, the write is undone and the error returned, so the caller can retry.
   */
  async retry(id: string): Promise<JobView> {
    const job = await this.load(id);
    if (!RETRYABLE_STATES.includes(job.state)) throw illegalState(job, 'retried', RETRYABLE_STATES);
    const route = this.deps.config.routes[job.type];
    if (!route) {
      throw new ConflictError(`job type "${job.type}" is not deployed; job ${id} cannot run`, 'type_not_deployed', {
        jobId: id,
      });
    }
    const now = this.deps.clock.now();
    const result = await this.deps.control.restart({ id, type: job.type, from: RETRYABLE_STATES, now });
    if (result.kind === 'missing') throw new NotFoundError(`job ${JSON.stringify(id)} not found`, 'job_not_found');
    if (result.kind === 'refused') throw illegalState(result.job, 'retried', RETRYABLE_STATES);

    const log = this.deps.log.child({ jobId: id, type: job.type });
    const message: JobMessage = { v: 1, id, type: job.type };
    try {
      await this.deps.queue.send(route.queueUrl, message);
    } catch (error) {
      const undone = await this.deps.control
        .undoRestart({ previous: job, retries: result.job.retries ?? 1 })
        .catch(() => undefined);
      log.error('could not send the message of a retried job', { undone: undone ?? 'unknown', ...errorFields(error) });
      // Refused: the restarted job moved on (another message of it was claimed), so the retry
      // took effect and stands; the supervisor re-sends it if it waits. Otherwise the caller
      // learns that nothing changed (undone) or must look (the undo's outcome is unknown).
      if (undone !== false) throw error;
      const current = await this.deps.store.get(id).catch(() => undefined);
      return toView(current ?? result.job);
    }
    log.info('job retried', {
      previousState: job.state,
      retries: result.job.retries,
      ...describeJob(this.specs.get(job.type), job.payload),
    });
    return toView(result.job);
  }
}
