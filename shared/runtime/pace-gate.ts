/**
 * The worker's side of a throttle (see shared/core/pace.ts and docs/flow-control.md): before its
 * claim, a job takes the next turn of its key. A turn that is now starts the attempt; a later one
 * is recorded on the job (`waitingFor`, so the job says why it waits and a duplicate delivery
 * keeps the turn) and the message is hidden until then. Nothing polls.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Clock } from '../core/clock';
import { WHOLE_TYPE_KEY } from '../core/flow';
import type { Job } from '../core/job';
import type { JobTypeSpec } from '../core/job-type';
import { LATE_TURN_MS, type Pacer, paceScope, resolvePaceKey, throttlePace } from '../core/pace';
import type { JobStore } from '../core/ports';
import { EARLY_START_TOLERANCE_MS } from '../core/scheduling';
import type { Logger } from '../logger';

export type Turn =
  /** Start the attempt now (any fraction of a second before the turn has been waited out). */
  | { kind: 'go' }
  /** Wait: the turn is at `until` (epoch ms), recorded on the job. */
  | { kind: 'later'; until: number };

/** A throttled job type's turns; undefined for a type without a throttle. */
export function createPaceGate(deps: {
  spec: Pick<JobTypeSpec, 'type' | 'throttle'>;
  pacer: Pacer;
  store: JobStore;
  clock: Clock;
}) {
  const { spec, pacer, store, clock } = deps;
  const throttle = spec.throttle;
  if (!throttle) return undefined;
  const pace = throttlePace(throttle);
  const scope = paceScope(spec.type, 'throttle');

  function keyOf(job: Pick<Job, 'throttleKey' | 'payload'>): string {
    if (job.throttleKey !== undefined) return job.throttleKey;
    try {
      return resolvePaceKey(throttle as never, job.payload, 'throttle'); // written before the type had it
    } catch {
      return WHOLE_TYPE_KEY;
    }
  }

  return {
    /**
     * The turn of `job`'s attempt `token` (the lease token its claim gives): the one it was given
     * already (unless it came to it more than {@link LATE_TURN_MS} late), or the key's next.
     */
    async turn(job: Job, token: number, log: Logger): Promise<Turn> {
      const key = keyOf(job);
      const now = clock.now();
      const w = job.waitingFor;
      let at: number | undefined;
      if (w?.kind === 'throttle' && w.token === token && w.key === key) {
        const until = Date.parse(w.until);
        if (now <= until + LATE_TURN_MS) at = until;
        else log.info('came to its throttle turn late; taking a new one', { key, lateMs: now - until });
      }
      if (at === undefined) {
        at = await pacer.takeTurn({ scope, key, now, pace });
        if (at - now > EARLY_START_TOLERANCE_MS) {
          const iso = (ms: number) => new Date(ms).toISOString();
          await store.markWaiting?.({
            job,
            waitingFor: { kind: 'throttle', key, until: iso(at), token, since: iso(now) },
            now,
          });
          log.info('waiting for its throttle turn', { key, until: iso(at) });
        }
      }
      const wait = at - clock.now();
      if (wait > EARLY_START_TOLERANCE_MS) return { kind: 'later', until: at };
      if (wait > 0) await sleep(Math.ceil(wait) + 1);
      return { kind: 'go' };
    },
  };
}

export type PaceGate = NonNullable<ReturnType<typeof createPaceGate>>;
