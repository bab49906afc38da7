import type { PlatformConfig } from '../config';
import type { Clock } from '../core/clock';
import {
  type Admitted,
  effectiveLimit,
  type FlowSlots,
  type Holder,
  type Slot,
  type SlotState,
  slotsOf,
  WHOLE_TYPE_KEY,
} from '../core/flow';
import type { JobTypeSpec } from '../core/job-type';
import { keyLimitIndex, keyLimitsRequest } from '../core/key-limits';
import { fairQueueTypes } from '../core/message-group';
import type { JobQueue, JobScheduler } from '../core/ports';
import { type DispatchDeps, dispatchNow, handOffOf } from '../dispatch/dispatch';
import { NotFoundError } from '../errors';
import { errorFields, type Logger } from '../logger';

const running = (holders: readonly Holder[]) =>
  holders.map((h) => ({ jobId: h.jobId, since: new Date(h.since).toISOString() }));

/** One concurrency limit of a key, as `GET /types/{type}/keys/{key}` and the limits routes show it. */
export interface KeyLimitView {
  index: number;
  /** The limit that holds: the one set at run time, or the spec's. */
  limit: number;
  specLimit: number;
  source: 'spec' | 'runtime';
  /** Who set the run-time limit, and when (ISO 8601); only with `source: 'runtime'`. */
  setBy?: string;
  setAt?: string;
  key: string;
  running: { jobId: string; since: string }[];
  waiting: number;
}

/** The view of limit `index` of a key from its slot's state. */
export function keyLimitView(index: number, slot: Slot, state: SlotState): KeyLimitView {
  const runtime = state.runtimeLimit;
  return {
    index,
    limit: effectiveLimit(slot, runtime),
    specLimit: slot.limit,
    source: runtime ? 'runtime' : 'spec',
    ...(runtime ? { setBy: runtime.by, setAt: new Date(runtime.at).toISOString() } : {}),
    key: slot.key,
    running: running(state.holders),
    waiting: state.waiting,
  };
}

export interface KeyLimitsServiceDeps {
  config: Pick<PlatformConfig, 'routes' | 'queues'>;
  catalog: readonly JobTypeSpec[];
  flow: FlowSlots;
  queue: JobQueue;
  scheduler?: JobScheduler;
  clock: Clock;
  log: Logger;
}

/** What the limits routes answer: the key's limits as they hold now, and the jobs a raise started. */
export interface KeyLimitsAnswer {
  type: string;
  key: string;
  limits: KeyLimitView[];
  /** The waiting jobs the change handed a place to (and sent their messages). */
  handedOn: string[];
}

/**
 * `PUT` and `DELETE /types/{type}/keys/{key}/limits`: sets (or removes) a key's concurrency limit
 * at run time. The request is checked whole before anything is written (400 `invalid_limits`).
 * Then one UpdateItem on the slot item (1 write unit up to 1 KB), and the slot's admit: a raise
 * hands its new places to the waiting jobs at once (a read, and per job handed on 1 write unit
 * in an oldest-first line or 4 in a ranked one, and an SQS send). A lowered limit lets the
 * holders finish; it holds from the next start. A job pays nothing for it: `lim` is read by the
 * conditions of the writes it makes anyway.
 */
export class KeyLimitsService {
  private readonly specs: Map<string, JobTypeSpec>;
  private readonly handOff: DispatchDeps;

  constructor(private readonly deps: KeyLimitsServiceDeps) {
    this.specs = new Map(deps.catalog.map((spec) => [spec.type, spec]));
    this.handOff = handOffOf(deps.config, deps.queue, deps.scheduler, fairQueueTypes(deps.catalog));
  }

  private specOf(type: string): JobTypeSpec {
    const spec = this.specs.get(type);
    if (!spec) throw new NotFoundError(`job type ${JSON.stringify(type)} not found`, 'type_not_found');
    return spec;
  }

  /** Sets the key's limit (`body`: `{ concurrency, limit? }`) as `by`. */
  async set(type: string, key: string, body: unknown, by: string): Promise<KeyLimitsAnswer> {
    const spec = this.specOf(type);
    const target = keyLimitsRequest(type, spec.concurrency, key, body);
    const now = this.deps.clock.now();
    await this.deps.flow.setLimit({ slot: target.slot, limit: target.concurrency, by, now });
    this.deps.log.info('concurrency limit set', {
      type,
      key: target.slot.key,
      index: target.index,
      limit: target.concurrency,
      specLimit: target.slot.limit,
      by,
    });
    const handedOn = await this.handOn(target.slot);
    return { type, key, limits: await this.views(spec, key), handedOn };
  }

  /** Removes the key's limit set at run time (`limit`: the index, as in {@link set}); the spec's holds again. */
  async clear(type: string, key: string, limit: unknown, by: string): Promise<KeyLimitsAnswer> {
    const spec = this.specOf(type);
    const index = keyLimitIndex(type, spec.concurrency, key, limit);
    const slot = slotsOf(type, spec.concurrency ?? [], this.keysFor(spec, key))[index] as Slot;
    await this.deps.flow.setLimit({ slot, limit: undefined, by, now: this.deps.clock.now() });
    this.deps.log.info('concurrency limit cleared', { type, key: slot.key, index, specLimit: slot.limit, by });
    // the spec's limit may be above the one removed
    const handedOn = await this.handOn(slot);
    return { type, key, limits: await this.views(spec, key), handedOn };
  }

  /** The key's concurrency limits as they hold now. */
  async views(spec: JobTypeSpec, key: string): Promise<KeyLimitView[]> {
    const slots = slotsOf(spec.type, spec.concurrency ?? [], this.keysFor(spec, key));
    const states = await Promise.all(slots.map((slot) => this.deps.flow.state(slot)));
    return slots.map((slot, i) => keyLimitView(i, slot, states[i] as SlotState));
  }

  private keysFor(spec: JobTypeSpec, key: string): string[] {
    return (spec.concurrency ?? []).map((l) => (l.key ? key : WHOLE_TYPE_KEY));
  }

  /**
   * Hands the slot's free places to the jobs waiting on it and sends each its message. A send
   * that fails is logged: the job holds its place, and the worker that looks at the slot next
   * sends its message again (shared/runtime/flow-gate.ts, reclaim).
   */
  private async handOn(slot: Slot): Promise<string[]> {
    const now = this.deps.clock.now();
    const handedOn: string[] = [];
    // each job is sent its message as it is admitted: an admit that fails part-way loses none
    const send = async (job: Admitted) => {
      handedOn.push(job.jobId);
      try {
        await dispatchNow(this.handOff, { id: job.jobId, type: job.type }, now);
      } catch (error) {
        this.deps.log.warn('could not send a job the place a limit change handed it; it is sent again later', {
          jobId: job.jobId,
          ...errorFields(error),
        });
      }
    };
    await this.deps.flow.admit({ slot, now, onAdmitted: send });
    return handedOn;
  }
}
