import type { PlatformConfig } from '../config';
import type { Clock } from '../core/clock';
import {
  type Admitted,
  effectiveLimit,
  type FlowSlots,
  type Holder,
  type InLine,
  MAX_LINE_LISTED,
  type Slot,
  type SlotState,
  slotsOf,
  WHOLE_TYPE_KEY,
} from '../core/flow';
import type { JobTypeSpec } from '../core/job-type';
import { fairLimitSlot, type KeyLimitField, keyLimitIndex, keyLimitsRequest, paceTarget } from '../core/key-limits';
import { fairQueueTypes } from '../core/message-group';
import type { Pacer } from '../core/pace';
import type { JobQueue, JobScheduler } from '../core/ports';
import { rankTime } from '../core/priority';
import { type DispatchDeps, dispatchNow, handOffOf } from '../dispatch/dispatch';
import { NotFoundError } from '../errors';
import { errorFields, type Logger } from '../logger';
import { type PaceView, paceView } from './pace-view';

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
  /**
   * The first jobs in line ({@link MAX_LINE_LISTED} at most), first served first: a ticket's, or
   * a rank's (with the time it stands for: due time less the priority's head start). For a limit
   * shared fairly, the asked key's own line.
   */
  line: LineView[];
  /** For a limit shared fairly (`fairBy`): the asked key's share. */
  fair?: FairKeyView;
}

/** A job in line, as the key views show it. */
export interface LineView {
  jobId: string;
  ticket?: number;
  /** When its rank stands for (ISO 8601): its due time less its priority's head start. */
  rankedAt?: string;
}

/** A fair key's share of a limit shared fairly. */
export interface FairKeyView {
  key: string;
  weight: number;
  /** `runtime`: set by `PUT …/limits` (`weight`); `spec`: the spec's `weight`, or 1. */
  weightSource: 'spec' | 'runtime';
  running: number;
  waiting: number;
}

const lineView = (line: readonly InLine[]): LineView[] =>
  line.map((e) => ({
    jobId: e.jobId,
    ...(e.ticket === undefined ? {} : { ticket: e.ticket }),
    ...(e.rank === undefined ? {} : { rankedAt: new Date(rankTime(e.rank)).toISOString() }),
  }));

/** A fair key's share, from the fair slot's state. */
export function fairKeyView(slot: Slot, state: SlotState): FairKeyView | undefined {
  if (!slot.fair) return undefined;
  const key = slot.fair.key;
  // own properties only: a tenant may be called `constructor`
  const own = <T>(record: Record<string, T> | undefined): T | undefined =>
    record && Object.hasOwn(record, key) ? record[key] : undefined;
  const runtime = own(state.fairWeights);
  return {
    key,
    weight: runtime ?? slot.fair.weightOf(key),
    weightSource: runtime === undefined ? 'spec' : 'runtime',
    running: state.holders.filter((h) => h.fair === key).length,
    waiting: own(state.waitingByFairKey) ?? 0,
  };
}

/** The view of limit `index` of a key from its slot's state and line. */
export function keyLimitView(index: number, slot: Slot, state: SlotState, line: readonly InLine[] = []): KeyLimitView {
  const runtime = state.runtimeLimit;
  const fair = fairKeyView(slot, state);
  return {
    index,
    limit: effectiveLimit(slot, runtime),
    specLimit: slot.limit,
    source: runtime ? 'runtime' : 'spec',
    ...(runtime ? { setBy: runtime.by, setAt: new Date(runtime.at).toISOString() } : {}),
    key: slot.key,
    running: running(state.holders),
    waiting: state.waiting,
    line: lineView(line),
    ...(fair ? { fair } : {}),
  };
}

/** One limit of a type in `GET /types/{type}/keys`. */
export interface TypeKeysView {
  index: number;
  /** A keyed limit: its keys are not listed (look one up by its value). */
  keyed: boolean;
  /** A limit shared fairly: `keys` are its fair keys that run, wait or have a weight set. */
  fair?: boolean;
  limit?: number;
  running?: number;
  waiting?: number;
  keys: FairKeyView[];
}

export interface KeyLimitsServiceDeps {
  config: Pick<PlatformConfig, 'routes' | 'queues'>;
  catalog: readonly JobTypeSpec[];
  flow: FlowSlots;
  /** Throttles' and rate limits' keys; without it, setting one answers 404 `not_configured`. */
  pacer?: Pacer;
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
  /** The key's throttle and rate limit as they hold now, when the request set or removed one. */
  throttle?: PaceView;
  rateLimit?: PaceView;
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

  private pacer(): Pacer {
    if (!this.deps.pacer)
      throw new NotFoundError('throttles and rate limits are not configured here', 'not_configured');
    return this.deps.pacer;
  }

  private specOf(type: string): JobTypeSpec {
    const spec = this.specs.get(type);
    if (!spec) throw new NotFoundError(`job type ${JSON.stringify(type)} not found`, 'type_not_found');
    return spec;
  }

  /**
   * Sets the key's concurrency limit and/or weight (`body`: `{ concurrency?, limit?, weight? }`)
   * as `by`. Checked whole first: a bad field writes nothing.
   */
  async set(type: string, key: string, body: unknown, by: string): Promise<KeyLimitsAnswer> {
    const spec = this.specOf(type);
    const target = keyLimitsRequest(type, spec.concurrency, key, body, spec);
    const now = this.deps.clock.now();
    const handedOn: string[] = [];
    const paces: Partial<Record<'throttle' | 'rateLimit', PaceView>> = {};
    for (const what of ['throttle', 'rateLimit'] as const) {
      const pace = target[what];
      if (!pace) continue;
      const pacer = this.pacer();
      const { limit, periodSeconds, burst } = pace;
      const runtime = { limit, periodSeconds, ...(burst === undefined ? {} : { burst }), pace: pace.pace, by, at: now };
      await pacer.setPace({ scope: pace.scope, key: pace.key, runtime, spec: pace.spec, now });
      this.deps.log.info(`${what} set`, {
        type,
        key: pace.key,
        limit,
        periodSeconds,
        ...(burst === undefined ? {} : { burst }),
        by,
      });
      paces[what] = (await paceView(pacer, spec, what, key, now)) as PaceView;
    }
    if (target.concurrency) {
      const { slot, index, limit } = target.concurrency;
      await this.deps.flow.setLimit({ slot, limit, by, now });
      this.deps.log.info('concurrency limit set', { type, key: slot.key, index, limit, specLimit: slot.limit, by });
      handedOn.push(...(await this.handOn(slot)));
    }
    if (target.weight) {
      const { slot, fairKey, weight, index } = target.weight;
      await this.deps.flow.setWeight({ slot, fairKey, weight, by, now });
      this.deps.log.info('fair weight set', { type, key: fairKey, index, weight, by });
    }
    return { type, key, limits: await this.views(spec, key), handedOn, ...paces };
  }

  /**
   * Removes what was set at run time for the key: its concurrency limit (`field` `concurrency`,
   * on limit `limit`, as in {@link set}), or its weight (`weight`); the spec's holds again.
   */
  async clear(type: string, key: string, limit: unknown, by: string, field: KeyLimitField = 'concurrency') {
    const spec = this.specOf(type);
    const now = this.deps.clock.now();
    if (field === 'throttle' || field === 'rateLimit') {
      const target = paceTarget(type, spec, field, key);
      const pacer = this.pacer();
      await pacer.setPace({ scope: target.scope, key: target.key, runtime: undefined, spec: target.spec, now });
      this.deps.log.info(`${field} cleared`, { type, key: target.key, by });
      const view = (await paceView(pacer, spec, field, key, now)) as PaceView;
      return { type, key, limits: await this.views(spec, key), handedOn: [], [field]: view };
    }
    if (field === 'weight') {
      const { slot, index } = fairLimitSlot(type, spec.concurrency, key);
      await this.deps.flow.setWeight({ slot, fairKey: key, weight: undefined, by, now });
      this.deps.log.info('fair weight cleared', { type, key, index, by });
      return { type, key, limits: await this.views(spec, key), handedOn: [] };
    }
    const index = keyLimitIndex(type, spec.concurrency, key, limit);
    const slot = slotsOf(type, spec.concurrency ?? [], this.keysFor(spec, key))[index] as Slot;
    await this.deps.flow.setLimit({ slot, limit: undefined, by, now });
    this.deps.log.info('concurrency limit cleared', { type, key: slot.key, index, specLimit: slot.limit, by });
    // the spec's limit may be above the one removed
    const handedOn = await this.handOn(slot);
    return { type, key, limits: await this.views(spec, key), handedOn };
  }

  /** The key's concurrency limits as they hold now, each with its line (for a fair limit, the key's share and line). */
  async views(spec: JobTypeSpec, key: string): Promise<KeyLimitView[]> {
    const slots = slotsOf(spec.type, spec.concurrency ?? [], this.keysFor(spec, key));
    const read = (slot: Slot) =>
      Promise.all([this.deps.flow.state(slot), this.deps.flow.line({ slot, max: MAX_LINE_LISTED })]);
    const states = await Promise.all(slots.map(read));
    return slots.map((slot, i) => {
      const [state, line] = states[i] as [SlotState, InLine[]];
      return keyLimitView(i, slot, state, line);
    });
  }

  /**
   * The keys of the type's limits that one read can list: a limit without a key function (`*`),
   * and a limit shared fairly, whose slot knows every fair key that runs or waits (with its
   * weight). A keyed limit's keys are not listed: each is its own item, found by its key.
   */
  async keys(type: string): Promise<{ type: string; limits: TypeKeysView[] }> {
    const spec = this.specOf(type);
    const limits = spec.concurrency ?? [];
    const out: TypeKeysView[] = [];
    for (const [index, limit] of limits.entries()) {
      if (limit.key) {
        out.push({ index, keyed: true, keys: [] });
        continue;
      }
      const slot = slotsOf(
        type,
        limits,
        limits.map(() => WHOLE_TYPE_KEY),
      )[index] as Slot;
      const state = await this.deps.flow.state(slot);
      const total = {
        limit: effectiveLimit(slot, state.runtimeLimit),
        running: state.holders.length,
        waiting: state.waiting,
      };
      if (!limit.fairBy) {
        out.push({ index, keyed: false, ...total, keys: [] });
        continue;
      }
      const running = new Map<string, number>();
      for (const h of state.holders) if (h.fair !== undefined) running.set(h.fair, (running.get(h.fair) ?? 0) + 1);
      const names = new Set([
        ...running.keys(),
        ...Object.keys(state.waitingByFairKey ?? {}),
        ...Object.keys(state.fairWeights ?? {}),
      ]);
      const keys = [...names].sort().map((fairKey) => {
        const view = fairKeyView(
          { ...slot, fair: { key: fairKey, weightOf: (slot.fair as NonNullable<Slot['fair']>).weightOf } },
          state,
        );
        return view as FairKeyView;
      });
      out.push({ index, keyed: false, fair: true, ...total, keys });
    }
    return { type, limits: out };
  }

  private keysFor(spec: JobTypeSpec, key: string): string[] {
    // a fair limit's slot is the type's one (`*`); the key is the asked fair key's share in it
    return (spec.concurrency ?? []).map((l) => (l.key || l.fairBy ? key : WHOLE_TYPE_KEY));
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
