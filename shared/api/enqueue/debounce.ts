/**
 * A debounced type's enqueue: the new job opens its key's window and becomes its pending run,
 * ending the run it replaced (or stepping aside for a newer one); and the read of the run a
 * replaced job's window ended in.
 */
import { debounceRunAt, debounceScope, resolveDebounceKey } from '../../core/debounce';
import type { EnqueueRequest } from '../../core/enqueue';
import { isPendingDebounceRun, type Job } from '../../core/job';
import type { JobTypeSpec } from '../../core/job-type';
import { releaseOrHandOff } from '../../dispatch/release';
import { errorFields } from '../../logger';
import { type EnqueueContext, exists, finishedExpiresAt, releaseDeps } from './deps';

/** The window a new job opened: its key, when it starts, and the run it replaced. */
export interface DebounceOpen {
  key: string;
  runAt: number;
  first: number;
  seq: number;
  previous?: string;
}

/**
 * Makes a debounced type's new job its key's pending run, and says when it starts (the end of
 * the quiet period, or the window's longest wait) and which run it replaces. A replay of an id
 * that exists already changes nothing.
 */
export async function openDebounce(
  ctx: EnqueueContext,
  spec: JobTypeSpec,
  request: EnqueueRequest,
  id: string,
  payload: unknown,
  now: number,
): Promise<DebounceOpen | undefined> {
  const options = spec.debounce;
  const debouncer = ctx.deps.debouncer;
  if (!options || !debouncer) return undefined;
  const key = resolveDebounceKey(options, payload);
  // A replay must not take the run back from a newer job (and so replace it).
  if (request.id !== undefined && (await exists(ctx, request.id, now))) return undefined;
  const opened = await debouncer.open({ scope: debounceScope(spec.type), key, jobId: id, now });
  return {
    key,
    first: opened.first,
    seq: opened.seq,
    runAt: debounceRunAt(now, opened.first, options),
    ...(opened.previous === undefined ? {} : { previous: opened.previous }),
  };
}

/**
 * After a debounced job is created: ends the run it replaced, and settles with a newer job that
 * opened the window while this one was written. Returns the job as stored when it stepped aside
 * (skipped) for that one; undefined when it is the run.
 */
export async function settleDebounce(
  ctx: EnqueueContext,
  job: Job,
  debounced: DebounceOpen,
  now: number,
): Promise<Job | undefined> {
  const { store, debouncer, log } = ctx.deps;
  const scope = debounceScope(job.type);
  if (debounced.previous !== undefined) {
    await replaceRun(ctx, debounced.previous, job.id, debounced.seq, debounced.key, now);
  }
  // A newer job may have opened the window while this one was being written, and not found it
  // to replace: then this one steps aside for it (one of the two always sees the other). Only
  // for a run still pending: the window may name a job this one has just replaced (a client's
  // retry of a job not yet written opens the window again), and stepping aside for it would
  // leave the key with no run.
  const window = (await debouncer?.state({ scope, key: debounced.key })) ?? {};
  const other = window.run !== undefined && window.run !== job.id ? await store.get(window.run) : undefined;
  if (other && other.debounceSeq !== undefined && other.debounceSeq < debounced.seq) {
    // The window names an older job (a retry of it opened the window after this one): this
    // job is the run. It takes the window over, so the window closes when it starts and
    // `debouncedInto` finds it, and it ends that job if it still waits.
    await debouncer
      ?.adopt({ scope, key: debounced.key, from: other.id, to: job.id })
      .catch((error: unknown) =>
        log.warn('could not take over the debounce window', { jobId: job.id, ...errorFields(error) }),
      );
    if (isPendingDebounceRun(other)) await replaceRun(ctx, other.id, job.id, debounced.seq, debounced.key, now);
  } else if (other && isPendingDebounceRun(other)) {
    if (await replaceRun(ctx, job.id, other.id, other.debounceSeq, debounced.key, now)) {
      return await store.get(job.id);
    }
  }
  return undefined;
}

/**
 * Ends the pending run a newer job (`by`, whose window open had `bySeq`) of its debounce key
 * replaced: `skipped`, pointing to it. A run that started meanwhile runs: then both run, never
 * neither. Only a job of a lower `seq` is ended: a replay that opened the window again may make
 * two jobs each see the other as the run it replaced, and only the later open wins, so the key
 * keeps a run. True when it ended it.
 */
export async function replaceRun(
  ctx: EnqueueContext,
  previousId: string,
  by: string,
  bySeq: number | undefined,
  key: string,
  now: number,
): Promise<boolean> {
  const { store, log } = ctx.deps;
  try {
    const previous = await store.get(previousId);
    // a run that started (or ran, and an operator restarted it) is not replaced
    if (!previous || !isPendingDebounceRun(previous)) return false;
    const skipped =
      (await store.skip?.({
        job: previous,
        now,
        expiresAt: finishedExpiresAt(ctx, now),
        reason: { kind: 'debounce', key, by, at: new Date(now).toISOString() },
        ...(bySeq === undefined ? {} : { beforeSeq: bySeq }),
      })) ?? false;
    if (skipped) log.info('debounced: a newer job replaced the pending run', { jobId: previousId, by });
    if (skipped && ctx.deps.graph) {
      await releaseOrHandOff(releaseDeps(ctx), previous, now, log.child({ jobId: previousId }));
    }
    return skipped;
  } catch (error) {
    log.warn('could not end the run a debounce replaced; both run', { jobId: previousId, ...errorFields(error) });
    return false;
  }
}

/**
 * The run a replaced job's window ended in: read from the key's window item when the window is
 * the open one or the last one closed (one read), else by following the chain of replacements
 * (a read per hop, at most 20).
 */
export async function debounceRun(ctx: EnqueueContext, job: Job, by: string): Promise<string> {
  const spec = ctx.specs.get(job.type);
  const { debouncer, store } = ctx.deps;
  if (spec?.debounce && debouncer && job.debounceKey !== undefined && job.debounceWindow !== undefined) {
    const window = await debouncer.state({ scope: debounceScope(job.type), key: job.debounceKey });
    if (window.run !== undefined && window.first === job.debounceWindow) return window.run;
    if (window.lastRun !== undefined && window.lastFirst === job.debounceWindow) return window.lastRun;
  }
  let current = by;
  for (let hop = 0; hop < 20; hop++) {
    const next = await store.get(current);
    if (next?.skipReason?.kind !== 'debounce' || next.skipReason.by === undefined) return current;
    current = next.skipReason.by;
  }
  return current;
}
