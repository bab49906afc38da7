import { PREEMPTIBLE_STATES } from '../../core/control';
import type { Slot } from '../../core/flow';
import type { Job } from '../../core/job';
import { jobSlots } from '../../core/job-slots';
import { leaseHeld } from '../../core/lease';
import type { ClaimResult, RefusedClaim } from '../../core/ports';
import { lineRank } from '../../core/priority';
import { isSettled } from '../../core/states';
import { ConfigError } from '../../errors';
import { errorFields } from '../../logger';
import { persist } from '../attempt-support';
import type { WorkerKit } from '../delivery/kit';
import { createFlowGate, type FlowGate } from '../flow-gate';
import { startsNow } from './claimable';
import {
  type AfterClaim,
  type Delivery,
  type Ending,
  type GateBuilder,
  type GatePass,
  GO,
  GO_ON,
  type Outcome,
  type Verdict,
} from './gate';

/**
 * True when a refused claim shows that an attempt under `token` (or a later one) was claimed,
 * by another delivery, and may still run: running, or cancelled (or cancelled and retried) while
 * it ran, whose lease the store keeps until its handler must have stopped. Slots this delivery
 * entered for `token` before that claim are then the same entries as that attempt's (two
 * deliveries that read the job before its claim share them), and only that attempt's worker gives
 * them back, once its handler has stopped. An attempt that ended through its own write (succeed,
 * retry, fail) no longer carries a lease.
 */
export function attemptOfTokenMayRun(claim: ClaimResult, token: number, now: number): boolean {
  return 'job' in claim && claim.job.leaseToken >= token && leaseHeld(claim.job, now);
}

/** A refused claim whose handling ends the job: its last attempt died (`exhausted`), or it is past its `dispatchBy`. */
function endedByRefusal(claim: RefusedClaim): claim is Extract<RefusedClaim, { kind: 'exhausted' | 'past-deadline' }> {
  return claim.kind === 'exhausted' || claim.kind === 'past-deadline';
}

/**
 * Concurrency limits and singletons (see ../flow-gate.ts and docs/flow-control.md): a due job
 * takes every slot of its keys before its claim, in one global order, or waits in line on the
 * first full one (its message is done: the slot's holder hands it on with a message of its own).
 * A `skip` singleton whose key is taken ends the job `skipped`. The slots are given back when the
 * attempt is over, unless another delivery took the job over: its slots go on.
 */
export const slotsGate: GateBuilder = (kit) => {
  const { spec } = kit.def;
  if ((spec.concurrency?.length ?? 0) === 0 && spec.singleton === undefined) return undefined;
  const { flow, control, store } = kit.deps;
  if (!flow) throw new ConfigError(`job type "${spec.type}" has flow control: the worker needs its flow slots`);
  if (spec.singleton?.mode === 'cancel-running' && !control) {
    throw new ConfigError(`job type "${spec.type}" has a cancel-running singleton: the worker needs job control`);
  }
  const gate = createFlowGate({
    slots: flow,
    store,
    handOff: kit.handOff,
    clock: kit.clock,
    ...(control
      ? {
          cancel: async (jobId: string) => {
            const now = kit.clock.now();
            // never a held job: only an operator ends its hold
            await control.cancel({ id: jobId, from: PREEMPTIBLE_STATES, now, expiresAt: kit.expiresAt(now) });
            await kit.releaseAfterEnd(jobId, kit.log.child({ jobId }));
          },
        }
      : {}),
  });
  return { name: 'slots', pass: (d) => new SlotsPass(kit, gate, d) };
};

/** One delivery's slots: what it took before its claim, and for which attempt. */
class SlotsPass implements GatePass {
  private slots: Slot[] = [];
  /** The attempt token the slots were taken for before the claim (the one the claim should give), if taken. */
  private entered: number | undefined;
  /** The token of the claimed attempt whose slots are held, once claimed. */
  private held: number | undefined;
  /** An entry was asked for (it may be written though its answer was lost): a failed delivery looks (see {@link failed}). */
  private tried = false;

  constructor(
    private readonly kit: WorkerKit,
    private readonly gate: FlowGate,
    private readonly d: Delivery,
  ) {}

  async beforeClaim(): Promise<Verdict> {
    const { d, gate } = this;
    const current = await d.job();
    if (!current) return GO;
    this.slots = jobSlots(this.kit.def.spec, current);
    if (isSettled(current.state)) {
      // handed a slot after it ended (cancelled while it waited), or a duplicate of a finished
      // (or held) job; kept when a slot could not be given back, so that the next delivery tries again
      return (await gate.leaveIfHeld(current, this.slots, d.log)) ? GO : { kind: 'answer', outcome: 'retry' };
    }
    // running under a live lease: a duplicate (its slots are the attempt's); not due: the claim says so
    if (!startsNow(current, this.kit.type, d.now)) return GO;
    const rank = lineRank(this.kit.def.spec, current);
    this.tried = true;
    const entry = await gate.enter(current, this.slots, current.leaseToken + 1, d.log, rank);
    if (entry.kind === 'skipped') return this.singletonSkip(current, entry);
    if (entry.kind === 'waiting') {
      const place = entry.rank !== undefined ? { rank: entry.rank } : { ticket: entry.ticket };
      const fields = { scope: entry.slot.scope, key: entry.slot.key, ...place };
      return { kind: 'wait', why: 'waiting for a concurrency slot', fields };
    }
    this.entered = current.leaseToken + 1;
    return GO;
  }

  async afterClaim(claimed: Job): Promise<AfterClaim> {
    if (this.slots.length === 0) return GO_ON;
    const token = claimed.leaseToken;
    if (this.entered !== token) {
      // Claimed without its slots taken for this attempt (the job changed between the read
      // and the claim): take them now, or give the attempt back before it runs.
      // If it has to wait, its attempt is given back due now: it waits in line under that runAt's rank.
      const now = this.kit.clock.now();
      const rank = lineRank(this.kit.def.spec, { ...claimed, runAt: new Date(now).toISOString() });
      this.tried = true;
      const entry = await this.gate.enter(claimed, this.slots, token, this.d.log, rank);
      // (a claimed job has an attempt, so its singleton waits rather than skips)
      if (entry.kind !== 'entered') {
        this.d.log.info('claimed without a free concurrency slot; waiting for one', { key: entry.slot.key });
        this.entered = undefined; // what it took before the claim was for another attempt, and goes on
        return { kind: 'give-back', runAt: now, what: 'giving back an attempt that has no slot' };
      }
    }
    this.held = token;
    return GO_ON;
  }

  async finish(ending: Ending): Promise<Outcome | undefined> {
    if (ending.kind === 'failed') return await this.failed();
    if (ending.kind === 'ran')
      return this.held === undefined ? undefined : await this.afterRun(this.held, ending.ended);
    if (ending.kind === 'refused' && endedByRefusal(ending.claim) && this.slots.length > 0) {
      // The refusal ended the job (failed, expired): what it still holds (its dead last
      // attempt's slots, a place handed to it in line) goes on; nothing was taken for it here.
      const left = await this.gate.leaveIfHeld(ending.claim.job, this.slots, this.d.log);
      return left ? undefined : 'retry';
    }
    if (ending.kind === 'given-back' && this.held !== undefined) {
      // a gate after this one gave the claimed attempt back: the slots held for it go on
      await this.leave(this.held);
      return undefined;
    }
    const entered = this.entered;
    if (entered === undefined) return undefined;
    // Not started: the slots taken for it go on. None for a duplicate of a running job: the
    // entry it found is the running attempt's, which gives it back when it ends. Nor when
    // another delivery claimed the attempt they were taken for, which may still run (see
    // attemptOfTokenMayRun): the entry is that attempt's too.
    if (ending.kind === 'refused') {
      const { claim } = ending;
      if (claim.kind === 'busy' || attemptOfTokenMayRun(claim, entered, this.d.now)) return undefined;
    }
    await this.leave(entered);
    return undefined;
  }

  /**
   * An error escaped the delivery before its attempt ran, after it asked for its entries (a
   * throttled claim; a take applied, its answer lost). Its message is kept, but another receipt
   * of it may have run the attempt and deleted it, and no delivery then comes back: when the job
   * has ended, what it holds is given back now (a read; a write per entry held). A job that has
   * not ended keeps them: an attempt of the entry's token may be claimed by another delivery that
   * shares them, and the job's next attempt takes them over (a job in line frees a place left
   * behind over a backoff). Best effort: a failure here leaves the rest to the message kept.
   */
  private async failed(): Promise<Outcome | undefined> {
    if (!this.tried || this.slots.length === 0) return undefined;
    const { d } = this;
    try {
      const job = await persist(() => this.kit.deps.store.get(d.id), d.log, 'reading the job after a failed delivery');
      if (job && isSettled(job.state)) await this.gate.leaveIfHeld(job, this.slots, d.log);
    } catch (error) {
      d.log.warn('could not look at the places of a job whose delivery failed', errorFields(error));
    }
    return 'retry';
  }

  private leave(token: number): Promise<boolean> {
    return this.gate.leave({ id: this.d.id }, this.slots, this.d.log, token);
  }

  /**
   * After the claimed attempt: its slots are given back, unless another delivery took the job
   * over. An attempt that wrote its end (`ended`) gives them back with no read: the job runs no
   * more under its lease, and the token keeps the entries of a later attempt that took them over.
   */
  private async afterRun(token: number, ended: boolean): Promise<Outcome | undefined> {
    const { d } = this;
    // Unreadable: give them back anyway; the token keeps a newer attempt's entries (a
    // takeover) safe, and a slot left behind would be held until a job in line looks.
    const read = () => this.kit.deps.store.get(d.id);
    const running = async () =>
      (await persist(read, d.log, 'reading the job after its attempt').catch(() => undefined))?.state === 'running';
    if (!ended && (await running())) return undefined;
    // Not given back: keep the message; its next delivery finds the job ended and gives them back.
    return (await this.leave(token)) ? undefined : 'retry';
  }

  private singletonSkip(job: Job, entry: { slot: Slot; by?: string }): Verdict {
    const at = new Date(this.kit.clock.now()).toISOString();
    const by = entry.by === undefined ? {} : { by: entry.by };
    return {
      kind: 'skip',
      job,
      reason: { kind: 'singleton', key: entry.slot.key, ...by, at },
      ifRefused: 'done',
      note: 'skipped: a job of its singleton key runs',
      fields: { key: entry.slot.key, ...by },
    };
  }
}
