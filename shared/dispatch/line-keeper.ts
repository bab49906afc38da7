/**
 * What keeps a slot's line moving, whoever looks at it: the worker's gate
 * (shared/runtime/flow-gate.ts) when a job gives its places back or has to wait, and the enqueue
 * (shared/api/enqueue/line.ts) when a new job joins its line with no message. A place freed is
 * handed on and its job sent its message; a job that has to wait and is first in line (or sees a
 * suspect holder) looks at the holders, and frees the places of those that will never give them
 * back. Nothing here polls.
 */
import { routeOf } from '../config';
import type { Clock } from '../core/clock';
import {
  type AcquireInput,
  type AcquireResult,
  type Admitted,
  acquireEach,
  type FlowSlots,
  type Holder,
  type Slot,
} from '../core/flow';
import type { Job } from '../core/job';
import { holderSuspect, WAKE_GRACE_MS } from '../core/job-slots';
import { leaseHeld } from '../core/lease';
import { type GroupedJob, groupKeysOf } from '../core/message-group';
import { createOneAtATime } from '../core/one-at-a-time';
import type { JobStore } from '../core/ports';
import { isSettled, isTerminal } from '../core/states';
import { errorFields, type Logger } from '../logger';
import { type DispatchDeps, dispatchNow } from './dispatch';
import { persist } from './persist';

/**
 * A job cancelled while it ran may still be stopping (its handler goes on until its worker's next
 * heartbeat): its places stay its own until its lease may no longer be held.
 */
export function mayStillRun(job: Pick<Job, 'state' | 'leaseExpiresAt'>, now: number): boolean {
  return job.state === 'cancelled' && leaseHeld(job, now);
}

/** A holder that will never give its place back: finished or held (and not still stopping), or gone. */
export function gone(job: Job | undefined, now: number): boolean {
  return !job || (isSettled(job.state) && !mayStillRun(job, now));
}

export interface LineKeeperDeps {
  slots: FlowSlots;
  store: JobStore;
  /** The job types' queues, for the message that starts a job handed a slot (sent through `dispatch()`). */
  handOff: DispatchDeps;
  clock: Clock;
}

/** What a job that has to wait saw of its slot as it joined (an `acquire`'s `waiting` answer). */
export interface Joined {
  /** It is the next the slot serves. */
  first: boolean;
  holders: readonly Holder[];
  /** The limit set at run time, when one holds. */
  limit?: number;
}

/** The key that one kind of write to a slot (`admit`, `join`) takes turns on in this process. */
const slotTurn = (what: string, slot: Pick<Slot, 'scope' | 'key'>) => `${what}#${slot.scope}#${slot.key}`;

export function createLineKeeper(deps: LineKeeperDeps) {
  const { slots, store, clock } = deps;
  // a slot's admissions in this process, and its takes and joins at enqueue, take turns (they write one item:
  // at once, they refuse each other); a delivery's take and a give-back do not
  const oneAtATime = createOneAtATime();
  /** By slot: the admission waiting for its turn, which a caller that comes meanwhile shares. */
  const admitWaiting = new Map<string, { done: Promise<void> }>();

  /**
   * Sends a job its message: it was handed a slot. A lost one is found again (see reclaim). The
   * message carries the job's group when its keys are known here (a holder reclaim read), not
   * when only its id is (a slot's hand-on: reading the job for it would cost a read).
   */
  async function wake(job: GroupedJob & { id: string }, log: Logger): Promise<void> {
    const { id: jobId, type } = job;
    if (!routeOf(deps.handOff, type)) {
      log.error('a job handed a concurrency slot has no queue here; it starts when the supervisor finds it', {
        jobId,
        type,
      });
      return;
    }
    try {
      const now = clock.now();
      const handed = { id: jobId, type, ...groupKeysOf(job) };
      await persist(() => dispatchNow(deps.handOff, handed, now), log, 'sending a job its slot');
    } catch (error) {
      log.warn('could not send a job the slot it was handed; it is sent again later', { jobId, ...errorFields(error) });
    }
  }

  /**
   * Hands the slot's free places to the oldest waiting jobs and sends them their messages. The
   * admissions this process makes on one slot run one after another: at once, each would read
   * the same head and all but one be refused; in turn, the next one reads what the last wrote.
   * Callers that come while one runs share the next one: it starts after each of their changes
   * (a place given back, a job joined), so it reads them all, and hands on in one round what
   * they freed, where one round each would mostly find nothing left (a read each, and a wait
   * behind the others for every caller).
   */
  function admit(slot: Slot, log: Logger): Promise<void> {
    const turn = slotTurn('admit', slot);
    // a look that has not started yet reads the slot after this caller's change: share it
    const waiting = admitWaiting.get(turn);
    if (waiting) return waiting.done;
    const mine: { done: Promise<void> } = { done: Promise.resolve() };
    admitWaiting.set(turn, mine);
    mine.done = oneAtATime.run(turn, () => {
      if (admitWaiting.get(turn) === mine) admitWaiting.delete(turn);
      return admitNow(slot, log);
    });
    return mine.done;
  }

  async function admitNow(slot: Slot, log: Logger): Promise<void> {
    // each job handed a place is sent its message as it is admitted: a call that fails part-way
    // (and is tried again) has lost none of them
    const handOn = async (a: Admitted) => {
      const place = a.rank !== undefined ? { rank: a.rank } : { ticket: a.ticket };
      log.info('handed a place in line on', { to: a.jobId, scope: slot.scope, key: slot.key, ...place });
      // a fair admission knows the job's tenant: its wake carries the group its first message did
      await wake({ id: a.jobId, type: a.type, ...(a.fair === undefined ? {} : { flowKeys: [a.fair] }) }, log);
    };
    await persist(
      () => slots.admit({ slot, now: clock.now(), onAdmitted: handOn }),
      log,
      'handing on a concurrency slot',
    );
  }

  /**
   * Frees the places of holders that will never give them back (finished, or gone), and sends
   * again the message of a holder handed its place a while ago that has not started. Run by the
   * first job in line when it has to wait, and by any job in line that sees a suspect holder (see
   * {@link suspect}): costs a read per holder it looks at, writes only what it frees. A place is
   * freed only under the token read with it, so an attempt that took it over since keeps it.
   */
  async function reclaim(
    slot: Slot,
    holders: readonly Holder[],
    look: readonly Holder[],
    self: string,
    log: Logger,
    limit = slot.limit,
  ) {
    const now = clock.now();
    let freed = 0;
    for (const holder of look) {
      if (holder.jobId === self) continue;
      const job = await store.get(holder.jobId);
      if (gone(job, now)) {
        if (await freeGone(slot, holder, job, log)) freed += 1;
      } else if (!job || isTerminal(job.state)) {
        // cancelled while it ran, and may still be stopping: its worker gives the place back
      } else if ((job.state === 'retrying' || job.state === 'waiting') && Date.parse(job.runAt) > now + WAKE_GRACE_MS) {
        // a retry waits for its backoff (a sleep for its end) without a slot: this one was left behind (unless its
        // next attempt took it meanwhile: the token says whose it is)
        if (await freeGone(slot, holder, job, log)) freed += 1;
      } else if (job.state !== 'running' && holder.since < now - WAKE_GRACE_MS) {
        await wake(job, log);
      }
    }
    // A free place with a line means a hand-on was lost (its job died after giving the slot back): do it now.
    if (freed > 0 || holders.length < limit) await admit(slot, log);
  }

  /** Frees the place of a holder that is finished, gone or left behind, under the token read with it; true when freed. */
  async function freeGone(slot: Slot, holder: Holder, job: Job | undefined, log: Logger): Promise<boolean> {
    const freed = await slots.release({ slot, jobId: holder.jobId, token: holder.token });
    // only when freed: a place its job's newer attempt took meanwhile (another token) is not this one
    if (freed) {
      log.warn('freed a concurrency slot its job never gave back', {
        scope: slot.scope,
        key: slot.key,
        holder: holder.jobId,
        state: job?.state ?? 'missing',
      });
    }
    return freed;
  }

  /**
   * What a job that has to wait does once it joined: the first in line looks at every holder;
   * any other that sees a free place hands it on, and any that sees a suspect holder looks at it,
   * so a line whose head never comes back (cancelled, expired, or its ticket orphaned) after a
   * hand-on was lost still moves.
   */
  async function look(slot: Slot, joined: Joined, self: string, log: Logger): Promise<void> {
    // the limit that holds: a run-time one when set, else the spec's
    const limit = joined.limit ?? slot.limit;
    if (joined.first) return await reclaim(slot, joined.holders, joined.holders, self, log, limit);
    const now = clock.now();
    const suspects = joined.holders.filter((h) => holderSuspect(h, now));
    if (suspects.length > 0) await reclaim(slot, joined.holders, suspects, self, log, limit);
    else if (joined.holders.length < limit) await admit(slot, log);
  }

  /** Takes and joins at enqueue waiting for their slot's turn in this process, by slot. */
  const waitingTurn = new Map<string, PendingPlace[]>();

  /**
   * Takes a new job's place, or joins it to the line (`acquire`, token 0), after this process's
   * other takes and joins of the slot: the jobs of a batch request joining one line write its item
   * one after another, not against each other. Those that gathered while a turn ran go together
   * in the next one (`acquireEach`: an adapter joins the ones that wait in a few transactions).
   */
  function placeInTurn(input: AcquireInput): Promise<AcquireResult> {
    const turn = slotTurn('join', input.slot);
    return new Promise<AcquireResult>((resolve, reject) => {
      const gathering = waitingTurn.get(turn);
      if (gathering) {
        gathering.push({ input, resolve, reject });
        return;
      }
      waitingTurn.set(turn, [{ input, resolve, reject }]);
      void oneAtATime.run(turn, async () => {
        const these = waitingTurn.get(turn) ?? [];
        waitingTurn.delete(turn);
        // the answers settled so far: a turn that fails part-way fails only the places it did not
        // answer (a job that already holds its place or waits in line is not sent as if it did not)
        const answers: (AcquireResult | undefined)[] = [];
        let failure: unknown = new Error('no answer for this place');
        try {
          const all = await acquireEach(
            slots,
            these.map((p) => p.input),
            (i, answer) => {
              answers[i] = answer;
            },
          );
          all.forEach((answer, i) => {
            answers[i] = answer;
          });
        } catch (error) {
          failure = error;
        }
        these.forEach((p, i) => {
          const answer = answers[i];
          if (answer) p.resolve(answer);
          else p.reject(failure);
        });
      });
    });
  }

  return { wake, admit, reclaim, freeGone, look, placeInTurn };
}

export type LineKeeper = ReturnType<typeof createLineKeeper>;

/** A take or join at enqueue waiting for its slot's turn. */
interface PendingPlace {
  input: AcquireInput;
  resolve(answer: AcquireResult): void;
  reject(error: unknown): void;
}
