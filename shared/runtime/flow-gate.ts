/**
 * The worker's side of concurrency limits (see shared/core/flow.ts and docs/flow-control.md):
 * a job takes its slots before its claim, and gives them back once its attempt is over; a job
 * with no free slot records why it waits and leaves, and the job that frees a slot sends it a
 * message (shared/dispatch/line-keeper.ts). Nothing here polls.
 */
import { effectiveLimit, type Holder, type Slot } from '../core/flow';
import type { Job } from '../core/job';
import { createLineKeeper, gone, type LineKeeperDeps, mayStillRun } from '../dispatch/line-keeper';
import { errorFields, type Logger } from '../logger';
import { persist } from './attempt-support';

export interface FlowGateDeps extends LineKeeperDeps {
  /** Cancels a job (an operator's cancel): for a `cancel-running` singleton. */
  cancel?(jobId: string): Promise<void>;
}

export type Entry =
  /** Every slot is held: start the attempt. `fresh`: slots this entry took (give them back if it does not start). */
  | { kind: 'entered'; fresh: boolean }
  /** A slot is full: the job waits on it (holding the slots before it), with a ticket or, in a ranked line, its rank. */
  | { kind: 'waiting'; slot: Slot; ticket?: number; rank?: string }
  /** Its `skip` singleton's key is taken (by `by`, when a job holds it): the job must not run. */
  | { kind: 'skipped'; slot: Slot; by?: string };

export function createFlowGate(deps: FlowGateDeps) {
  const { slots, store, clock } = deps;
  const keeper = createLineKeeper(deps);
  const { admit, freeGone } = keeper;

  /** A `cancel-running` singleton: cancels the jobs holding the key; each gives its place back once it has stopped. */
  async function cancelHolders(holders: readonly Holder[], self: string, log: Logger): Promise<void> {
    for (const holder of holders) {
      if (holder.jobId === self) continue;
      if (!deps.cancel) {
        log.error('a cancel-running singleton has no way to cancel here; it waits its turn instead', {
          holder: holder.jobId,
        });
        return;
      }
      try {
        await deps.cancel(holder.jobId);
        log.info('cancelled the job running with this singleton key', { holder: holder.jobId });
      } catch (error) {
        log.warn('could not cancel the job holding this singleton key; waiting for it', {
          holder: holder.jobId,
          ...errorFields(error),
        });
      }
    }
  }

  return {
    /**
     * Takes the job's slots in order. A job that must wait records why (once per place in line)
     * and keeps the slots before the full one: jobs take slots in one order, so none wait in a
     * cycle. With `rank` (a type with priorities), it waits in the slots' ranked lines under it.
     */
    async enter(job: Job, jobSlotList: readonly Slot[], token: number, log: Logger, rank?: string): Promise<Entry> {
      let fresh = false;
      for (const [i, slot] of jobSlotList.entries()) {
        const mine = job.waitingFor;
        const waitsHere =
          mine !== undefined &&
          (mine.kind === 'concurrency' || mine.kind === 'singleton') &&
          mine.limit === i &&
          mine.key === slot.key;
        const ticket = waitsHere ? mine.ticket : undefined;
        // a job in a ranked line keeps the place it joined under while that entry waits; once it
        // does not (admitted, and the place given back), it joins again under its rank now
        const remembered = waitsHere && rank !== undefined ? mine.rank : undefined;
        // A `skip` singleton turns away a new run, not a retry of one that ran, one that resumes
        // after a sleep or a signal, nor one in line. An operator's retry or rerun (of a held job
        // above all: a run in flight) starts again at attempts 0, but its lease token says it ran.
        const skip =
          slot.singleton === 'skip' &&
          job.attempts === 0 &&
          job.leaseToken === 0 &&
          job.state !== 'retrying' &&
          job.state !== 'waiting' &&
          ticket === undefined &&
          remembered === undefined;
        const take = () =>
          slots.acquire({
            slot,
            jobId: job.id,
            type: job.type,
            now: clock.now(),
            token,
            ...(ticket === undefined ? {} : { ticket }),
            ...(rank === undefined ? {} : { rank }),
            ...(remembered === undefined ? {} : { waitsAs: remembered }),
            ...(skip ? { wait: false } : {}),
          });
        let got = await take();
        // A skip takes no ticket, so no job in line ever looks at the holder: look now (one read,
        // the limit is 1), and free a holder that will never give the key back.
        if (got.kind === 'busy') {
          let freed = false;
          for (const holder of got.holders.filter((h) => h.jobId !== job.id)) {
            const held = await store.get(holder.jobId);
            if (gone(held, clock.now()) && (await freeGone(slot, holder, held, log))) freed = true;
          }
          // the freed place goes to the line first, if one waits (a retry, which is never skipped)
          if (freed) {
            await admit(slot, log);
            got = await take();
          }
        }
        if (got.kind === 'held') {
          fresh ||= got.fresh;
          continue;
        }
        if (got.kind === 'busy') {
          const by = got.holders.find((h) => h.jobId !== job.id)?.jobId;
          return { kind: 'skipped', slot, ...(by === undefined ? {} : { by }) };
        }
        if (got.rank !== undefined ? got.rank !== remembered : got.ticket !== ticket) {
          const since = new Date(clock.now()).toISOString();
          const kind = slot.singleton ? 'singleton' : 'concurrency';
          const place = got.rank !== undefined ? { rank: got.rank } : { ticket: got.ticket };
          await store.markWaiting?.({ job, waitingFor: { kind, limit: i, key: slot.key, ...place, since } });
        }
        if (slot.singleton === 'cancel-running') await cancelHolders(got.holders, job.id, log);
        await keeper.look(slot, got, job.id, log);
        return {
          kind: 'waiting',
          slot,
          ...(got.rank !== undefined ? { rank: got.rank } : got.ticket !== undefined ? { ticket: got.ticket } : {}),
        };
      }
      return { kind: 'entered', fresh };
    },

    /**
     * Gives back the slots a finished job still holds (it was handed one after it ended, or it
     * died between its last write and giving them back): reads, and writes only what it holds,
     * under the token it read. Not while a cancelled attempt may still run: its worker gives
     * them back once its handler has stopped (or, if it died, a job in line once its lease ran out).
     * False when one could not be given back (keep the message: its next delivery tries again).
     */
    async leaveIfHeld(
      job: Pick<Job, 'id' | 'state' | 'leaseExpiresAt'>,
      jobSlotList: readonly Slot[],
      log: Logger,
    ): Promise<boolean> {
      if (mayStillRun(job, clock.now())) return true;
      let all = true;
      for (const slot of [...jobSlotList].reverse()) {
        const state = await slots.state(slot);
        const mine = state.holders.find((h) => h.jobId === job.id);
        if (mine) {
          if (!(await this.leave(job, [slot], log, mine.token))) all = false;
        } else if (state.waiting > 0 && state.holders.length < effectiveLimit(slot, state.runtimeLimit)) {
          // it holds none, but a place is free while jobs wait: its hand-on may have failed after
          // its release (its message was kept for this): hand it on now
          try {
            await admit(slot, log);
          } catch (error) {
            all = false;
            log.error('could not hand on a concurrency slot', {
              scope: slot.scope,
              key: slot.key,
              ...errorFields(error),
            });
          }
        }
      }
      return all;
    },

    /**
     * Gives back the job's slots (last first) and hands them on. Safe when it holds none. With
     * `token`, only slots held for that attempt: a newer attempt of the job keeps its own. False
     * when one could not be given back (the caller should keep the job's message, so that its
     * next delivery tries again).
     */
    async leave(job: Pick<Job, 'id'>, jobSlotList: readonly Slot[], log: Logger, token?: number): Promise<boolean> {
      let all = true;
      for (const slot of [...jobSlotList].reverse()) {
        try {
          const gave = await persist(
            () => slots.release({ slot, jobId: job.id, ...(token === undefined ? {} : { token }) }),
            log,
            'giving back a concurrency slot',
          );
          // the line that says the place ended when nobody waits for it (no hand-on is logged)
          if (gave) log.info('gave back a concurrency slot', { scope: slot.scope, key: slot.key, holder: job.id });
          // Even when it held none (a try whose answer was lost freed it): admitting reads first, and writes only to hand a place on.
          await admit(slot, log);
        } catch (error) {
          // The caller keeps the job's message, whose next delivery gives it back (leaveIfHeld);
          // else a job in line frees it (reclaim).
          all = false;
          log.error('could not give back a concurrency slot', {
            scope: slot.scope,
            key: slot.key,
            ...errorFields(error),
          });
        }
      }
      return all;
    },
  };
}

export type FlowGate = ReturnType<typeof createFlowGate>;
