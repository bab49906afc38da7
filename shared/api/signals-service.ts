import { randomUUID } from 'node:crypto';
import { type PlatformConfig, routeOf } from '../config';
import type { TypeScope } from '../core/access';
import { type BlobStore, blobKey, MAX_BLOB_BYTES, offload } from '../core/blobs';
import type { Clock } from '../core/clock';
import { pastRetention } from '../core/control';
import { SIGNAL_LOOK_MS } from '../core/due';
import { JOB_ID_PATTERN } from '../core/enqueue';
import { EVENT_SIGNAL_PREFIX, type EventWaiter, isEventSignal } from '../core/event-waits';
import type { JobTypeSpec } from '../core/job-type';
import {
  checkName,
  JOURNAL_RETENTION_DAYS,
  type Journal,
  type JournalScope,
  journalScopeOf,
  MAX_SIGNAL_BYTES,
  type SignalOutcome,
  type SignalReceipt,
  timedOutAt,
} from '../core/journal';
import { jsonBytes } from '../core/limits';
import { fairQueueTypes, groupKeysOf } from '../core/message-group';
import { payloadHash } from '../core/payload-hash';
import type { JobQueue, JobStore } from '../core/ports';
import { isTerminal } from '../core/states';
import { incarnationOf } from '../core/table';
import { parseOrThrow } from '../core/validation';
import { dispatch } from '../dispatch/dispatch';
import { ConflictError, DependencyError, NotFoundError, PayloadTooLargeError, ValidationError } from '../errors';
import { errorFields, type Logger } from '../logger';
import { scopeRefusal } from './access';
import { signalRequestSchema } from './schemas';

export interface SignalsServiceDeps {
  config: PlatformConfig;
  catalog: readonly JobTypeSpec[];
  store: JobStore;
  journal: Journal;
  queue: JobQueue;
  clock: Clock;
  log: Logger;
  /**
   * The payload bucket (shared/core/blobs.ts): a signal payload over 64 KiB is kept there, and the
   * inbox holds its reference (one S3 PUT more). @default none: such payloads are refused (413)
   */
  blobs?: BlobStore;
}

/**
 * `POST /jobs/{id}/signals/{name}`: puts the signal in the job's inbox (one conditional write,
 * 1 write unit up to 1 KB, and 1 for its due entry), records it as the outcome of the job's wait
 * for it unless that wait timed out first (one conditional write of 1 write unit; then the answer
 * is `late`), then, if the job waits for it, makes the job due now (one more conditional write)
 * and sends its message. The inbox item's due entry brings the supervisor to the job
 * {@link SIGNAL_LOOK_MS} later: if the wake or the send was lost (this call died after the inbox
 * write, or failed and was not sent again), it wakes the job then. A signal sent before the job
 * waits stays in the inbox: the wait finds it there. One signal per name per job: a replay with
 * the same payload answers 200 and stores nothing; another payload is refused (409 `signal_exists`).
 */
export class SignalsService {
  private readonly specs: Map<string, JobTypeSpec>;
  /** The catalog's types whose messages carry an SQS message group. */
  private readonly fairQueues: ReadonlySet<string>;

  constructor(private readonly deps: SignalsServiceDeps) {
    this.specs = new Map(deps.catalog.map((spec) => [spec.type, spec]));
    this.fairQueues = fairQueueTypes(deps.catalog);
  }

  async send(
    id: string,
    name: string,
    body: unknown,
    caller: { by?: string; scope?: TypeScope } = {},
  ): Promise<{ created: boolean; receipt: SignalReceipt }> {
    if (!JOB_ID_PATTERN.test(id)) throw new NotFoundError(`job ${JSON.stringify(id)} not found`, 'job_not_found');
    checkName(name, 'signal');
    if (isEventSignal(name)) {
      throw new ValidationError(
        `signal names starting "${EVENT_SIGNAL_PREFIX}" are reserved for event waits: send the event (POST /events)`,
        [{ path: 'name', message: `must not start with "${EVENT_SIGNAL_PREFIX}"` }],
        'reserved_signal',
      );
    }
    const request = parseOrThrow(signalRequestSchema, body ?? {}, { message: 'invalid signal request' });
    const size = jsonBytes(request.payload ?? null);
    const limit = this.deps.blobs ? MAX_BLOB_BYTES : MAX_SIGNAL_BYTES;
    if (size > limit) {
      throw new PayloadTooLargeError(`signal payload is ${size} bytes of JSON; the limit is ${limit} bytes`, limit);
    }
    const { store, clock } = this.deps;
    const now = clock.now();
    const job = await store.get(id);
    if (!job || pastRetention(job, now))
      throw new NotFoundError(`job ${JSON.stringify(id)} not found`, 'job_not_found');
    // the access check read the type before this read; the signal goes to this job's own
    // incarnation, so checking it here leaves no gap
    const refusal = scopeRefusal(caller, { action: 'signal', types: [job.type] });
    if (refusal) throw refusal;
    const schemas = this.specs.get(job.type)?.signals;
    let payload: unknown = request.payload ?? null;
    if (schemas) {
      const schema = schemas[name];
      if (!schema) {
        throw new ValidationError(
          `job type "${job.type}" declares no signal "${name}"`,
          [{ path: 'name', message: `must be one of: ${Object.keys(schemas).sort().join(', ')}` }],
          'unknown_signal',
        );
      }
      payload = parseOrThrow(schema, payload, {
        message: `signal payload does not match the ${job.type} "${name}" schema`,
        code: 'invalid_payload',
        prefix: 'payload',
      });
    }
    if (isTerminal(job.state)) {
      throw new ConflictError(`job ${id} is ${job.state}: it waits for no signal any more`, 'job_finished', {
        jobId: id,
        state: job.state,
      });
    }
    // the inbox and journal of this job: a later job of the same id has its own
    const scope: JournalScope = journalScopeOf(job);
    const { stored, hash, at } = await this.toInbox(scope, name, payload, now);
    if (!stored.stored && stored.existing.payloadHash !== hash) {
      throw new ConflictError(`job ${id} already has a signal "${name}" with another payload`, 'signal_exists', {
        jobId: id,
        signal: name,
      });
    }
    const receivedAt = stored.stored ? at : stored.existing.at;
    const late = await this.tooLate(scope, name, receivedAt, now);
    // A replay wakes too: the first send's wake or message may have been lost.
    const resumed = late ? false : await this.wake(job.type, id, name, now);
    return {
      created: stored.stored,
      receipt: { jobId: id, signal: name, receivedAt, resumed, late, duplicate: !stored.stored },
    };
  }

  /**
   * Delivers an event to a job that waits for it (`ctx.waitForEvent`), through the wait's
   * reserved signal, as {@link send} delivers a signal: the inbox (1 write unit up to 1 KB, and 1
   * for its due entry), the wait's outcome (1), the wake (1) and its message. Nothing for a
   * waiter that is gone (a finished job, another job under the id: 1 read unit), whose job was
   * created after the event was sent (`before`: not its business, as the wait's own look finds
   * only events sent since its job was created; 1 read unit), or that another event reached
   * first (`taken`: its inbox holds that one; the journal's first write wins).
   */
  async deliverEvent(
    waiter: EventWaiter,
    event: { id: string; name: string; data: unknown; at: string },
  ): Promise<'delivered' | 'late' | 'taken' | 'gone' | 'before'> {
    const { store, clock } = this.deps;
    const now = clock.now();
    const job = await store.get(waiter.jobId);
    if (!job || pastRetention(job, now) || isTerminal(job.state)) return 'gone';
    if (incarnationOf(job.createdAt) !== waiter.incarnation) return 'gone';
    // the line the wait's look draws (EventWaits.firstSince from the job's creation), drawn here
    // too: else a job made while the send ran would get the event or not by timing
    if (Date.parse(event.at) < Date.parse(job.createdAt)) return 'before';
    const name = waiter.signal;
    const payload = { id: event.id, name: event.name, data: event.data };
    // the job's journal as it is now (a rerun starts a new series of it)
    const scope: JournalScope = journalScopeOf(job);
    const { stored, hash, at } = await this.toInbox(scope, name, payload, now);
    if (!stored.stored && stored.existing.payloadHash !== hash) return 'taken';
    const receivedAt = stored.stored ? at : stored.existing.at;
    if (await this.tooLate(scope, name, receivedAt, now)) return 'late';
    await this.wake(job.type, waiter.jobId, name, now);
    return 'delivered';
  }

  /**
   * Stores the signal in the job's inbox (the first send of a name wins), with the supervisor's
   * look at it due shortly, in case the wake that follows is lost (the call dies, or its writes fail).
   */
  private async toInbox(scope: JournalScope, name: string, payload: unknown, now: number) {
    const hash = payloadHash(`signal:${name}`, payload);
    const at = new Date(now).toISOString();
    // over 64 KiB: the inbox keeps a reference, and the waiting workflow reads the payload back
    const kept = await offload(this.deps.blobs, payload, {
      inlineLimit: MAX_SIGNAL_BYTES,
      key: () => blobKey('signal', scope.jobId, randomUUID()),
      what: 'payload',
    });
    const stored = await this.deps.journal.deliver({
      ...scope,
      name,
      signal: { payload: kept, payloadHash: hash, at },
      expiresAt: Math.floor(now / 1000) + JOURNAL_RETENTION_DAYS * 86_400,
      dueAt: now + SIGNAL_LOOK_MS,
    });
    return { stored, hash, at };
  }

  /**
   * Records the stored signal as the outcome of the job's wait for it (`{ received }`, one
   * conditional write of 1 write unit; the payload stays in the inbox), unless the wait recorded
   * its outcome first. True when that outcome is a timeout: the signal is late.
   *
   * Why this is exact: the outcome is written once, and the first write wins. The wait records
   * its timeout only after its last look at the inbox (shared/runtime/workflow.ts). A signal in
   * the inbox before that look is returned by the wait. One stored after it is recorded here
   * either before the timeout (the wait's write is refused and it returns this signal: not late)
   * or after it (refused here, finding the timeout: late). A read of the outcome instead of this
   * write would not do: it could come between the wait's look and its timeout write, see
   * nothing, and answer "not late" for a signal the wait then never returns.
   */
  private async tooLate(scope: JournalScope, name: string, receivedAt: string, now: number): Promise<boolean> {
    const outcome: SignalOutcome = { received: receivedAt };
    const recorded = await this.deps.journal.record({
      ...scope,
      kind: 'signal',
      name,
      value: outcome,
      at: now,
      expiresAt: Math.floor(now / 1000) + JOURNAL_RETENTION_DAYS * 86_400,
    });
    return !recorded.recorded && timedOutAt(recorded.existing.value) !== undefined;
  }

  /** Makes the job due now if it waits for this signal, and sends its message. */
  private async wake(type: string, id: string, name: string, now: number): Promise<boolean> {
    const woken = await this.deps.store.wake({ id, signal: name, now });
    if (!woken) return false;
    // a worker's ctx.emit may wake a job of a type outside its routes: its queue is found by the
    // deployment's queue naming, as a worker sends a child of another type
    if (!routeOf(this.deps.config, type)) return true;
    try {
      // due now; the woken job's keys name its message's group
      const via = {
        queue: this.deps.queue,
        routes: this.deps.config.routes,
        queues: this.deps.config.queues,
        fairQueues: this.fairQueues,
      };
      await dispatch(via, { id, type, ...groupKeysOf(woken) }, now);
    } catch (error) {
      // The signal is stored and the job due, but its message (hidden until the wait's timeout)
      // may not come before then: the caller sends the signal again, whose wake finds the job
      // woken and sends the message; else the supervisor sends it at the signal's due entry.
      this.deps.log.warn('could not send the message of a job its signal woke', { jobId: id, ...errorFields(error) });
      throw new DependencyError(
        `the signal was stored and job ${id} woken, but its message could not be sent (${error instanceof Error ? error.message : String(error)}). Send the same signal again to resume it now.`,
        error,
        { jobId: id },
      );
    }
    return true;
  }
}
