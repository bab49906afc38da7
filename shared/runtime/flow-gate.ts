/**
 * The worker's side of concurrency limits (see shared/core/flow.ts and docs/flow-control.md):
 * a job takes its slots before its claim, and gives them back once its attempt is over; a job
 * with no free slot records why it waits and leaves, and the job that frees a slot sends it a
 * message. Nothing here polls.
 */
import type { Clock } from '../core/clock';
import { type FlowSlots, type Holder, resolveFlowKeys, type Slot, slotsOf, WHOLE_TYPE_KEY } from '../core/flow';
import type { Job } from '../core/job';
import type { JobTypeSpec } from '../core/job-type';
import type { JobQueue, JobStore } from '../core/ports';
import { isTerminal } from '../core/states';
import { errorFields, type Logger } from '../logger';
import { persist } from './attempt-support';

/**
 * A job handed a slot is expected to start within this long (its message is on its way). A
 * holder that is still waiting to start after it is sent its message again: the message that
 * should have started it may be lost.
 */
export const WAKE_GRACE_MS = 2 * 60_000;

export interface FlowGateDeps {
  slots: FlowSlots;
  store: JobStore;
  queue: JobQueue;
  /** The ready queue of a job type, for the message that starts a job handed a slot. */
  queueUrlOf(type: string): string | undefined;
  clock: Clock;
}

export type Entry =
  /** Every slot is held: start the attempt. `fresh`: slots this entry took (give them back if it does not start). */
  | { kind: 'entered'; fresh: boolean }
  /** A slot is full: the job waits on it (holding the slots before it). */
  | { kind: 'waiting'; slot: Slot; ticket: number };

/** The slots a job of `spec` takes, in order; none for a type without limits. */
export function jobSlots(
  spec: Pick<JobTypeSpec, 'type' | 'concurrency'>,
  job: Pick<Job, 'flowKeys' | 'payload'>,
): Slot[] {
  const limits = spec.concurrency;
  if (!limits || limits.length === 0) return [];
  let keys = job.flowKeys;
  if (!keys || keys.length !== limits.length) {
    // A job written before its type had these limits: its keys from its payload, as at enqueue.
    try {
      keys = resolveFlowKeys(limits, job.payload);
    } catch {
      keys = limits.map(() => WHOLE_TYPE_KEY);
    }
  }
  return slotsOf(spec.type, limits, keys);
}

export function createFlowGate(deps: FlowGateDeps) {
  const { slots, store, queue, clock } = deps;

  /** Sends a job its message: it was handed a slot. A lost one is found again (see reclaim). */
  async function wake(jobId: string, type: string, log: Logger): Promise<void> {
    const queueUrl = deps.queueUrlOf(type);
    if (!queueUrl) {
      log.error('a job handed a concurrency slot has no queue here; it starts when the supervisor finds it', {
        jobId,
        type,
      });
      return;
    }
    try {
      await persist(() => queue.send(queueUrl, { v: 1, id: jobId, type }), log, 'sending a job its slot');
    } catch (error) {
      log.warn('could not send a job the slot it was handed; it is sent again later', { jobId, ...errorFields(error) });
    }
  }

  /** Hands the slot's free places to the oldest waiting jobs and sends them their messages. */
  async function admit(slot: Slot, log: Logger): Promise<void> {
    const admitted = await persist(() => slots.admit({ slot, now: clock.now() }), log, 'handing on a concurrency slot');
    for (const a of admitted) await wake(a.jobId, a.type, log);
  }

  /**
   * Frees the places of holders that will never give them back (finished, or gone), and sends
   * again the message of a holder handed its place a while ago that has not started. Run by the
   * first job in line when it has to wait: costs a read per holder, writes only what it frees.
   */
  async function reclaim(slot: Slot, holders: readonly Holder[], self: string, log: Logger): Promise<void> {
    const now = clock.now();
    let freed = 0;
    for (const holder of holders) {
      if (holder.jobId === self) continue;
      const job = await store.get(holder.jobId);
      if (!job || isTerminal(job.state)) {
        if (await slots.release({ slot, jobId: holder.jobId })) freed += 1;
        log.warn('freed a concurrency slot its job never gave back', {
          holder: holder.jobId,
          state: job?.state ?? 'missing',
        });
      } else if (job.state === 'retrying' && Date.parse(job.runAt) > now + WAKE_GRACE_MS) {
        // a retry waits for its backoff without a slot: this one was left behind (unless its
        // next attempt took it meanwhile: the token says whose it is)
        if (await slots.release({ slot, jobId: holder.jobId, token: holder.token })) freed += 1;
      } else if (job.state !== 'running' && holder.since < now - WAKE_GRACE_MS) {
        await wake(job.id, job.type, log);
      }
    }
    // A free place with a line means a hand-on was lost (its job died after giving the slot back): do it now.
    if (freed > 0 || holders.length < slot.limit) await admit(slot, log);
  }

  return {
    /**
     * Takes the job's slots in order. A job that must wait records why (once per ticket) and
     * keeps the slots before the full one: jobs take slots in one order, so none wait in a cycle.
     */
    async enter(job: Job, jobSlotList: readonly Slot[], token: number, log: Logger): Promise<Entry> {
      let fresh = false;
      for (const [i, slot] of jobSlotList.entries()) {
        const mine = job.waitingFor;
        const ticket = mine && mine.limit === i && mine.key === slot.key ? mine.ticket : undefined;
        const got = await slots.acquire({
          slot,
          jobId: job.id,
          type: job.type,
          now: clock.now(),
          token,
          ...(ticket === undefined ? {} : { ticket }),
        });
        if (got.kind === 'held') {
          fresh ||= got.fresh;
          continue;
        }
        if (got.ticket !== ticket) {
          const since = new Date(clock.now()).toISOString();
          await store.markWaiting?.({
            job,
            waitingFor: { kind: 'concurrency', limit: i, key: slot.key, ticket: got.ticket, since },
          });
        }
        if (got.first) await reclaim(slot, got.holders, job.id, log);
        // Any job in line that sees a free place hands it on: the head of the line may never come
        // back (cancelled, expired, or its ticket orphaned) after a hand-on was lost.
        else if (got.holders.length < slot.limit) await admit(slot, log);
        return { kind: 'waiting', slot, ticket: got.ticket };
      }
      return { kind: 'entered', fresh };
    },

    /** Gives back the slots a finished job still holds (it was handed one after it ended): reads, and writes only what it holds. */
    async leaveIfHeld(job: Pick<Job, 'id'>, jobSlotList: readonly Slot[], log: Logger): Promise<void> {
      const held: Slot[] = [];
      for (const slot of jobSlotList) {
        if ((await slots.state(slot)).holders.some((h) => h.jobId === job.id)) held.push(slot);
      }
      if (held.length > 0) await this.leave(job, held, log);
    },

    /**
     * Gives back the job's slots (last first) and hands them on. Safe when it holds none. With
     * `token`, only slots held for that attempt: a newer attempt of the job keeps its own.
     */
    async leave(job: Pick<Job, 'id'>, jobSlotList: readonly Slot[], log: Logger, token?: number): Promise<void> {
      for (const slot of [...jobSlotList].reverse()) {
        try {
          await persist(
            () => slots.release({ slot, jobId: job.id, ...(token === undefined ? {} : { token }) }),
            log,
            'giving back a concurrency slot',
          );
          // Even when it held none (a try whose answer was lost freed it): admitting reads first, and writes only to hand a place on.
          await admit(slot, log);
        } catch (error) {
          // Freed later by the first job in line (reclaim).
          log.error('could not give back a concurrency slot', {
            scope: slot.scope,
            key: slot.key,
            ...errorFields(error),
          });
        }
      }
    },
  };
}

export type FlowGate = ReturnType<typeof createFlowGate>;
