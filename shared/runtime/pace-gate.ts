/**
 * The worker's side of a throttle (see shared/core/pace.ts and docs/flow-control.md): before its
 * claim, a job takes the next turn of its key. A turn that is now starts the attempt; a later one
 * is recorded on the job (`waitingFor`, so the job says why it waits and a duplicate delivery
 * keeps the turn) and the message is hidden until then. Nothing polls.
 *
 * A type with priorities has a line per throttle key instead (shared/aws/pace-line.ts): a job
 * takes a turn only when one is free and it is first in line by rank; otherwise it waits in line
 * and comes back about when its turn would be. The job that takes a turn sends the one after it
 * its message; a job that finds a turn free for a while and another first in line sends that
 * one its message (its own may be hidden until later), after making sure it will come: an entry
 * whose job ended, is gone, is not due, or no longer waits under it is taken out.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { routeOf } from '../config';
import type { Clock } from '../core/clock';
import { WHOLE_TYPE_KEY } from '../core/flow';
import type { Job } from '../core/job';
import type { JobTypeSpec } from '../core/job-type';
import { LATE_TURN_MS, type PaceLineEntry, type Pacer, paceScope, resolvePaceKey, throttlePace } from '../core/pace';
import type { JobStore } from '../core/ports';
import { jobRank } from '../core/priority';
import { EARLY_START_TOLERANCE_MS } from '../core/scheduling';
import { isSettled } from '../core/states';
import { type DispatchDeps, dispatchNow } from '../dispatch/dispatch';
import { errorFields, type Logger } from '../logger';

export type Turn =
  /** Start the attempt now (any fraction of a second before the turn has been waited out). */
  | { kind: 'go' }
  /** Wait: the turn is at `until` (epoch ms), recorded on the job. */
  | { kind: 'later'; until: number };

/** How many entries of jobs that will not come one turn takes out before it waits on. */
const STALE_HEADS = 5;
/**
 * How long after its join an entry is taken to be coming whatever its job says: the job writes
 * its `waitingFor` after its join.
 */
const JOIN_GRACE_MS = 30_000;

const iso = (ms: number) => new Date(ms).toISOString();

/** A throttled job type's turns; undefined for a type without a throttle. */
export function createPaceGate(deps: {
  spec: Pick<JobTypeSpec, 'type' | 'throttle' | 'priority'>;
  pacer: Pacer;
  store: JobStore;
  clock: Clock;
  /** Where a job first in line is sent its message (a type with priorities). */
  handOff?: DispatchDeps;
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

  /**
   * Whether the job of a line's head will come for its turn: it exists, has not ended, is due,
   * and waits in this line under that entry (or joined it moments ago). One consistent read.
   */
  async function willCome(head: PaceLineEntry, key: string, now: number): Promise<boolean> {
    const job = await store.get(head.jobId);
    if (!job || isSettled(job.state)) return false;
    // not due (a retry in its backoff, joined again by a delivery read before its attempt):
    // it joins again when it is due
    if (Date.parse(job.runAt) > now + EARLY_START_TOLERANCE_MS) return false;
    const w = job.waitingFor;
    if (w?.kind === 'throttle' && w.key === key && w.rank === head.rank) return true;
    // a job that has just joined may not have written its `waitingFor` yet
    return head.joinedAt !== undefined && now - head.joinedAt < JOIN_GRACE_MS;
  }

  /** Sends the line's head its message: it is first, and a turn is free. */
  async function wake(head: PaceLineEntry, log: Logger): Promise<void> {
    if (!deps.handOff || !routeOf(deps.handOff, head.type)) {
      log.warn('the job first in a throttle line has no queue here; it starts when its own message comes', {
        jobId: head.jobId,
        type: head.type,
      });
      return;
    }
    try {
      await dispatchNow(deps.handOff, { id: head.jobId, type: head.type }, clock.now());
      log.info('sent the job first in its throttle line its turn', { to: head.jobId, rank: head.rank });
    } catch (error) {
      // its own message comes back at its estimate, or the next job in line wakes it again
      log.warn('could not send the job first in line its turn', { to: head.jobId, ...errorFields(error) });
    }
  }

  /** Records on the job that it waits in the line, under which rank, and about until when. */
  async function markLine(job: Job, key: string, rank: string, token: number, until: number, now: number, log: Logger) {
    await store.markWaiting?.({
      job,
      waitingFor: { kind: 'throttle', key, until: iso(until), token, rank, since: iso(now) },
      now,
    });
    log.info('waiting in its throttle line', { scope, key, rank, until: iso(until) });
  }

  /**
   * A turn this attempt took on the plain path (no line: a type that took priorities on while
   * it waited): `until`, unless it came to it more than {@link LATE_TURN_MS} late. A line's
   * `waitingFor` (with a `rank`) holds an estimate, not a turn.
   */
  function heldTurn(job: Job, token: number, key: string, now: number, log: Logger): number | undefined {
    const w = job.waitingFor;
    if (w?.kind !== 'throttle' || w.rank !== undefined || w.token !== token || w.key !== key) return undefined;
    const until = Date.parse(w.until);
    if (now <= until + LATE_TURN_MS) return until;
    log.info('came to its throttle turn late; taking a new one', { key, lateMs: now - until });
    return undefined;
  }

  /** Waits for a turn at `at`: in place when it is within a second, otherwise later. */
  async function startAt(at: number): Promise<Turn> {
    const wait = at - clock.now();
    if (wait > EARLY_START_TOLERANCE_MS) return { kind: 'later', until: at };
    if (wait > 0) await sleep(Math.ceil(wait) + 1);
    return { kind: 'go' };
  }

  /** The line's turn of `job` (a type with priorities). */
  async function lineTurn(job: Job, token: number, key: string, log: Logger): Promise<Turn> {
    // a turn taken before the type had priorities is kept
    const held = heldTurn(job, token, key, clock.now(), log);
    if (held !== undefined) return startAt(held);
    const w = job.waitingFor;
    const waits = w?.kind === 'throttle' && w.key === key && w.rank !== undefined ? w.rank : undefined;
    // it keeps the rank it joined under (its runAt may have moved since, as a give-back moves it)
    const rank = waits ?? jobRank(spec.priority ?? {}, job);
    const entry = { jobId: job.id, type: spec.type, rank };
    let inLine = waits !== undefined;
    let waited = false;
    let marked = waits !== undefined;
    for (let stale = 0; ; stale++) {
      const now = clock.now();
      const turn = await pacer.lineTurn({ scope, key, now, pace, job: entry, inLine });
      if (turn.kind === 'go') {
        // takeMs: how long the take's call took (the SDK's retries of a take whose answers were
        // lost, say): the turn was taken up to that long before this line
        log.info('took a turn of its throttle line', { scope, key, rank, takeMs: clock.now() - now });
        // the job after it is first now: its turn is next, and its own message may come much later
        if (turn.next) await wake(turn.next, log);
        return { kind: 'go' };
      }
      // a turn within a second: wait for it in place, once, rather than hiding the message for
      // so little (a job passed by another comes back behind the line, not so soon)
      const soon = turn.until - now;
      if (!turn.head && !waited && soon <= EARLY_START_TOLERANCE_MS && (turn.joined || inLine)) {
        // (not recorded for so short a wait: an entry with no record is taken out as stale, and
        // the job joins again under the same rank when its message comes back)
        if (turn.joined) log.info('waiting in its throttle line', { scope, key, rank, until: iso(turn.until) });
        waited = true;
        inLine = true;
        await sleep(Math.max(0, Math.ceil(soon)) + 1);
        continue;
      }
      if (turn.head && stale < STALE_HEADS && !(await willCome(turn.head, key, now))) {
        if (await pacer.leaveLine({ scope, key, rank: turn.head.rank })) {
          log.info('took out of its throttle line a job that will not come', {
            jobId: turn.head.jobId,
            scope,
            key,
            rank: turn.head.rank,
          });
        }
        continue;
      }
      if (turn.joined || !marked) {
        await markLine(job, key, rank, token, turn.until, now, log);
        marked = true;
      }
      if (turn.head) await wake(turn.head, log);
      return { kind: 'later', until: Math.max(turn.until, now + EARLY_START_TOLERANCE_MS + 1) };
    }
  }

  return {
    /**
     * The turn of `job`'s attempt `token` (the lease token its claim gives): the one it was given
     * already (unless it came to it more than {@link LATE_TURN_MS} late), or the key's next.
     */
    async turn(job: Job, token: number, log: Logger): Promise<Turn> {
      const key = keyOf(job);
      if (spec.priority) return lineTurn(job, token, key, log);
      const now = clock.now();
      let at = heldTurn(job, token, key, now, log);
      if (at === undefined) {
        at = await pacer.takeTurn({ scope, key, now, pace });
        if (at - now > EARLY_START_TOLERANCE_MS) {
          await store.markWaiting?.({
            job,
            waitingFor: { kind: 'throttle', key, until: iso(at), token, since: iso(now) },
            now,
          });
          log.info('waiting for its throttle turn', { key, until: iso(at) });
        }
      }
      return startAt(at);
    },
  };
}

export type PaceGate = NonNullable<ReturnType<typeof createPaceGate>>;
