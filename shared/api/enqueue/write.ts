/**
 * The write of one enqueue request: its checks, its rate limit, debounce and parents, the job's
 * one conditional put, and what follows it (a replay's answer, the registrations of a job that
 * waits for parents, a debounce's settling, the hand-off).
 */
import { randomUUID } from 'node:crypto';
import { pastRetention } from '../../core/control';
import { needsRelease } from '../../core/dependencies';
import { type EnqueuePlan, type EnqueueRequest, planEnqueue } from '../../core/enqueue';
import { type Job, type JobView, type SkipReason, toView } from '../../core/job';
import { METRIC } from '../../core/metrics';
import { payloadHash } from '../../core/payload-hash';
import { checkDispatchBy } from '../../core/scheduling';
import { ConflictError } from '../../errors';
import { checkRequest, refuseDebouncedDelay, refuseEventJobId } from './checks';
import { type DebounceOpen, openDebounce, settleDebounce } from './debounce';
import { type EnqueueContext, type EnqueueOptions, finishedExpiresAt } from './deps';
import { giveBackPlace, placeAtEnqueue } from './line';
import { applyStart, type Parents, parentsOf, putParents, registerAgain, registerNew } from './parents';
import { storedPayload } from './payload-ref';
import { rateLimited } from './rate-limit';
import { handOff, handOffEnded, type PendingSend, throwDispatchFailure } from './send';

/** What an enqueue wrote (or found), and the SQS send it still has to make. */
export interface WriteResult {
  created: boolean;
  job: JobView;
  send?: PendingSend;
}

/**
 * Validates, writes the job with one conditional put, and makes its schedule or returns its
 * send. Returns `created: false` with the stored job when the id exists with the same type and
 * payload (409 when it exists with another).
 */
export async function writeJob(
  ctx: EnqueueContext,
  request: EnqueueRequest,
  options: EnqueueOptions = {},
): Promise<WriteResult> {
  refuseEventJobId(request, options.fromEvent);
  const checked = checkRequest(ctx, request);
  const { spec, payload } = checked;
  const now = options.at ?? ctx.deps.clock.now();
  const id = request.id ?? randomUUID();
  if (spec.debounce) refuseDebouncedDelay(spec, request);
  // its times are checked before anything is written, the payload's object included (a debounced
  // job's run time is the window's, and it takes no delay)
  else planEnqueue(request, now);
  // Parents are checked before anything is written: an unknown one is a 400.
  const parents = request.dependsOn ? await parentsOf(ctx, spec, request.dependsOn, id, options) : undefined;
  // An uploaded or large payload: the item keeps a reference (an S3 PUT for a large inline one,
  // after the checks and first of all writes).
  const stored = await storedPayload(ctx.deps.blobs, request, payload, id, randomUUID());
  // A job over its rate is written skipped and never runs: it joins no debounce window (else it
  // would end the pending run it replaced, and neither would run).
  const skipReason = await rateLimited(ctx, spec, request, payload, now);
  const debounced =
    spec.debounce && skipReason === undefined ? await openDebounce(ctx, spec, request, id, payload, now) : undefined;
  const plan = planEnqueue(debounced ? { runAt: new Date(debounced.runAt).toISOString() } : request, now);
  const job = newJob({ request, options, checked, id, now, plan, debounced });
  if (stored !== payload) job.payload = stored;
  if (parents) applyStart(ctx, job, parents.start, now);
  if (skipReason) {
    // Over its rate: written as skipped (so the caller and the listing see why), never sent.
    Object.assign(job, {
      state: 'skipped',
      skipReason,
      finishedAt: new Date(now).toISOString(),
      expiresAt: finishedExpiresAt(ctx, now),
    } satisfies Partial<Job>);
  }
  if (parents) {
    // A job of this id exists (read with the parents): its parents item is never rewritten.
    const taken = parents.existing && !pastRetention(parents.existing, now) ? parents.existing : undefined;
    await putParents(ctx, job, parents, taken, options, now);
  }
  const written = await ctx.deps.store.create(job);
  if (!written.created) return await replayOf(ctx, written.existing, job, parents, now);
  return await afterCreate(ctx, job, { parents, debounced, skipReason, options }, now);
}

/** The job a request creates, before its parents or its rate limit change its state. */
function newJob(input: {
  request: EnqueueRequest;
  options: EnqueueOptions;
  checked: ReturnType<typeof checkRequest>;
  id: string;
  now: number;
  plan: EnqueuePlan;
  debounced: DebounceOpen | undefined;
}): Job {
  const { request, options, id, now, plan, debounced } = input;
  const { spec, payload, flowKeys, singletonKey, throttleKey, priority } = input.checked;
  const dispatchBy =
    request.dispatchBy === undefined ? undefined : checkDispatchBy(request.dispatchBy, plan.runAt, now);
  const nowIso = new Date(now).toISOString();
  return {
    id,
    type: spec.type,
    state: plan.state,
    payload,
    payloadHash: payloadHash(spec.type, payload),
    attempts: 0,
    maxAttempts: request.maxAttempts ?? spec.retry.maxAttempts,
    createdAt: nowIso,
    updatedAt: nowIso,
    runAt: new Date(plan.runAt).toISOString(),
    leaseToken: 0,
    errors: [],
    ...(request.backoff ? { backoff: request.backoff } : {}),
    ...(dispatchBy !== undefined ? { dispatchBy } : {}),
    ...(flowKeys ? { flowKeys } : {}),
    ...(singletonKey !== undefined ? { singletonKey } : {}),
    ...(throttleKey !== undefined ? { throttleKey } : {}),
    ...(priority !== undefined ? { priority } : {}),
    ...(debounced ? { debounceKey: debounced.key, debounceWindow: debounced.first, debounceSeq: debounced.seq } : {}),
    ...(options.schedule !== undefined ? { schedule: options.schedule } : {}),
    ...(options.by !== undefined ? { enqueuedBy: options.by } : {}),
    ...(options.childCount ? { childCount: options.childCount } : {}),
  };
}

/**
 * The id exists: with another type or payload a 409; else a replay, which may follow a lost
 * send (a not-yet-started job is handed to its queue again: a duplicate message is harmless, the
 * lease lets one delivery run) or a request that died before its registrations (made again).
 */
async function replayOf(
  ctx: EnqueueContext,
  existing: Job,
  job: Job,
  parents: Parents | undefined,
  now: number,
): Promise<WriteResult> {
  if (existing.payloadHash !== job.payloadHash) {
    throw new ConflictError(`job ${job.id} already exists with a different type or payload`, 'id_conflict', {
      jobId: job.id,
    });
  }
  // each edge is counted at most once on the child, whoever counts it
  if (parents && existing.state === 'waiting' && existing.pendingParents !== undefined) {
    await registerAgain(ctx, existing, parents.edges, now);
  }
  const view = toView(existing);
  if (existing.state === 'queued' || existing.state === 'scheduled') {
    return withSend(false, view, await handOff(ctx, existing, now, false));
  }
  // A replay of a job created finished with children (a flow's), whose hand-off was lost.
  if (needsRelease(existing)) return withSend(false, view, await handOffEnded(ctx, existing, now, false));
  return { created: false, job: view };
}

/** A created job: its registrations, its debounce, its hand-off. */
async function afterCreate(
  ctx: EnqueueContext,
  job: Job,
  made: {
    parents: Parents | undefined;
    debounced: DebounceOpen | undefined;
    skipReason: SkipReason | undefined;
    options: EnqueueOptions;
  },
  now: number,
): Promise<WriteResult> {
  const { parents, debounced, skipReason } = made;
  const { log, metrics } = ctx.deps;
  const start = parents?.start;
  if (parents && start?.kind === 'waiting' && job.state === 'waiting') {
    return { created: true, job: await registerNew(ctx, job, parents.edges, start, made.options, now) };
  }
  if (start?.kind === 'ended') {
    log.info('job ended at enqueue by a parent that did not succeed', {
      jobId: job.id,
      parent: start.parent,
      state: job.state,
    });
    return withSend(true, toView(job), await handOffEnded(ctx, job, now, true));
  }
  // not turned away by its rate limit
  if (!skipReason) metrics?.add(METRIC.enqueued, job.type);
  if (debounced) {
    const skipped = await settleDebounce(ctx, job, debounced, now);
    if (skipped) return { created: true, job: toView(skipped) };
  }
  if (skipReason) {
    log.info('job skipped: its rate limit is spent', { jobId: job.id, type: job.type, key: skipReason.key });
    return withSend(true, toView(job), await handOffEnded(ctx, job, now, true));
  }
  // a job of a ranked line takes its place at enqueue; one that waits in line is sent its message when handed a place
  const place = made.options.placeAtEnqueue === false ? undefined : await placeAtEnqueue(ctx, job, now);
  if (place?.kind === 'joined') return { created: true, job: toView(job) };
  const held = place?.kind === 'held' ? { place: place.slot } : {};
  const send = await handOff(ctx, job, now, true).catch(async (error: unknown) => {
    if (held.place) await giveBackPlace(ctx, job.id, held.place);
    return throwDispatchFailure(log, job.id, error);
  });
  return withSend(true, toView(job), send && { ...send, ...held });
}

function withSend(created: boolean, job: JobView, send: PendingSend | undefined): WriteResult {
  return { created, job, ...(send ? { send } : {}) };
}
