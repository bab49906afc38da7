/**
 * Enqueue and read jobs: the logic behind `POST /jobs` and `GET /jobs/{id}`, and the writes of
 * the batch and flow requests. Each concern is a module of ./enqueue: the request's checks, the
 * rate limit, the debounce, the parents, the write, and the hand-off to SQS or Scheduler.
 */
import type { EnqueueRequest } from '../core/enqueue';
import { type JobView, toView } from '../core/job';
import { NotFoundError } from '../errors';
import { deployedTypes, validateRequest } from './enqueue/checks';
import { debounceRun } from './enqueue/debounce';
import { type EnqueueContext, type EnqueueOptions, enqueueContext, type JobsServiceDeps } from './enqueue/deps';
import { withGraph } from './enqueue/parents';
import { withUploadedPayload } from './enqueue/payload-ref';
import { type PendingSend, sendOne, sendPending } from './enqueue/send';
import { type WriteResult, writeJob } from './enqueue/write';

export type { EnqueueOptions, JobsServiceDeps } from './enqueue/deps';
export type { PendingSend } from './enqueue/send';

export class JobsService {
  private readonly ctx: EnqueueContext;

  constructor(deps: JobsServiceDeps) {
    this.ctx = enqueueContext(deps);
  }

  /**
   * An enqueue body with its `payloadRef` (an upload) read into `payload`, as
   * `withUploadedPayload` (./enqueue/payload-ref.ts) does; any other body as it is, at no cost.
   */
  async withUploadedPayload(body: unknown, path = ''): Promise<unknown> {
    return withUploadedPayload(this.ctx.deps.blobs, body, path);
  }

  /** Types that are both in the catalog and deployed (have a route). */
  deployedTypes(): string[] {
    return deployedTypes(this.ctx);
  }

  /**
   * Validates, writes the job with one conditional put, then hands it to SQS or Scheduler.
   * Returns `created: false` with the stored job when the id exists with the same type and payload.
   */
  async enqueue(request: EnqueueRequest, options: EnqueueOptions = {}): Promise<{ created: boolean; job: JobView }> {
    const out = await this.write(request, options);
    if (out.send) await sendOne(this.ctx, out.send);
    return { created: out.created, job: out.job };
  }

  /**
   * The enqueue of many jobs: each request is written as {@link enqueue} writes it, but the SQS
   * messages are not sent: each result carries its {@link PendingSend}, to hand to
   * {@link sendPending} once the batch's writes are done.
   */
  async write(request: EnqueueRequest, options: EnqueueOptions = {}): Promise<WriteResult> {
    return writeJob(this.ctx, request, options);
  }

  /**
   * Sends the messages {@link write} left pending, with as few SendMessageBatch calls as SQS
   * allows. Returns, in order, undefined for a message sent, or the error to report for its job
   * (as {@link enqueue} would have thrown it).
   */
  async sendPending(sends: readonly PendingSend[]): Promise<(Error | undefined)[]> {
    return sendPending(this.ctx, sends);
  }

  /**
   * Every check of an enqueue request that writes nothing and reads nothing (type, payload, keys,
   * priority, times, the form of `dependsOn`): what `POST /flows` runs on every node before it writes any.
   * Returns the hash a job of this request would carry (to tell a replay from an id conflict).
   */
  validate(request: EnqueueRequest, path: string, options: { fromEvent?: boolean } = {}): { payloadHash: string } {
    return validateRequest(this.ctx, request, path, options);
  }

  /** A job's view, with its parents and children, and the run a debounce replaced it with. */
  async get(id: string): Promise<JobView> {
    const { store, clock } = this.ctx.deps;
    const job = await store.get(id);
    const now = clock.now();
    // TTL deletes lazily: an expired job is gone as far as callers are concerned.
    if (!job || (job.expiresAt !== undefined && job.expiresAt * 1000 < now)) {
      throw new NotFoundError(`job ${id} not found`, 'job_not_found');
    }
    const view = toView(job);
    await withGraph(this.ctx, view, job);
    if (job.skipReason?.kind === 'debounce' && job.skipReason.by !== undefined) {
      view.debouncedInto = await debounceRun(this.ctx, job, job.skipReason.by);
    }
    return view;
  }
}
