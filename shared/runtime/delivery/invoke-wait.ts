/**
 * The worker's side of an invoke's wait (`ctx.invoke`, see shared/dispatch/invoke.ts): the write
 * that ends the attempt to wait for the children, and the look at those that ended before it.
 */
import type { InvokeStart } from '../../core/invoke';
import type { Job, WakeWait } from '../../core/job';
import { journalScopeOf } from '../../core/journal';
import { METRIC } from '../../core/metrics';
import { childReader, startInvoked } from '../../dispatch/invoke';
import { releaseEndedInvokes } from '../../dispatch/release';
import { errorFields, type Logger } from '../../logger';
import { persist } from '../attempt-support';
import type { Invoker } from '../workflow';
import type { WorkerKit } from './kit';

/** What the handler's invokes start and look at children with; undefined without a job graph. */
export function invokerOf(kit: WorkerKit, job: Job): Invoker | undefined {
  const deps = kit.invokeDeps;
  if (!deps) return undefined;
  const look = childReader(deps.graph);
  return { start: (child) => startInvoked(deps, job, child, kit.clock.now()), look };
}

/**
 * Ends the attempt to wait for the children its invokes started: `waiting` with
 * `pendingParents` = their number (no message, no schedule: their release makes it due). A child
 * that ended before this write found the job running, and its release was refused: the look after
 * it counts those (and the release write's `rel.<index>` counts each edge once, whoever writes
 * first). When the look fails the message is kept: it comes back, and the claim it is refused
 * (the job waits for its children) looks again ({@link lookAtInvoked}).
 */
export async function awaitInvoked(
  kit: WorkerKit,
  at: { job: Job; writer: string; log: Logger },
  wait: WakeWait,
  invoked: readonly InvokeStart[],
  now: number,
): Promise<'done' | 'retry'> {
  const { job, writer, log } = at;
  await persist(
    () =>
      kit.deps.store.suspend({
        job,
        now,
        runAt: now,
        waitingFor: wait,
        writer,
        pendingParents: invoked.length,
        ...kit.spent(),
      }),
    log,
    'recording the invoke wait',
  );
  kit.metrics.add(METRIC.suspended, kit.type);
  log.info('job waits for the jobs it invoked', { name: wait.key, children: invoked.length });
  return await lookAtInvoked(kit, job, invoked, log);
}

/**
 * Releases the edges of the children `invoked` that ended already: 'retry' (keep the message)
 * when that failed.
 */
export async function lookAtInvoked(
  kit: WorkerKit,
  job: Job,
  invoked: readonly InvokeStart[],
  log: Logger,
): Promise<'done' | 'retry'> {
  const deps = kit.invokeDeps;
  if (!deps) return 'done';
  try {
    const released = await releaseEndedInvokes(deps, job, invoked, kit.clock.now());
    if (released > 0) log.info('counted invoked jobs that ended before the wait', { released });
    return 'done';
  } catch (error) {
    log.error('could not look at the invoked jobs; the message comes back to look again', errorFields(error));
    return 'retry';
  }
}

/**
 * The look after an invoke's wait, again: the children are read from the job's journal (each
 * `invoke#` entry whose `invoked#` outcome is not recorded), and those that ended are counted.
 */
export async function lookAgainAtInvoked(kit: WorkerKit, job: Job, log: Logger): Promise<'done' | 'retry'> {
  const journal = kit.deps.journal;
  if (!journal) return 'done';
  const entries = await journal.load(journalScopeOf(job));
  const open: InvokeStart[] = [];
  for (const [key, entry] of entries) {
    if (!key.startsWith('invoke#')) continue;
    if (!entries.has(`invoked#${key.slice('invoke#'.length)}`)) open.push(entry.value as InvokeStart);
  }
  return await lookAtInvoked(kit, job, open, log);
}
