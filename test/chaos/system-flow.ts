/**
 * The flow-controlled job types of a system chaos run, beside its plain ones: three singleton
 * types that share one scope (one per mode), a throttled type, a rate-limited type and a
 * debounced type. Each job's key is its `payload.tag`. Their jobs are planned apart from the
 * plain ones (their own draws), so a seed's plan of plain jobs is the same with or without them.
 */
import { rateLimitPace, throttlePace } from '../../shared/core/pace';
import type { ProbeJobOptions, ProbePayload } from '../support/probes';
import type { PlannedLine } from './system-plan';

/** The singleton scope the three singleton types share. */
export const SINGLETON_SCOPE = 'sys-one';

const tag = (p: ProbePayload) => p.tag ?? 'none';

/**
 * The throttle: a start every 2 s per key, bursts of 2. Slow, so that the bound's slack (skew,
 * late turns, claims under faults: about 4 s) is two starts, and a broken throttle shows even
 * among the few jobs of a small run.
 */
export const CHAOS_THROTTLE = { limit: 1, periodSeconds: 2, burst: 2 } as const;
/**
 * The throttle an operator sets at run time on the key of the throttled type's burst, before the
 * burst comes, and removes once the burst has its turns: a start every 3 s, no bursts (slower
 * than the spec's, so that a change not applied shows in the burst's turns; invariant 19).
 */
export const CHAOS_RUNTIME_THROTTLE = { limit: 1, periodSeconds: 3, burst: 1 } as const;
/** The rate limit: 2 accepted per minute per key (the excess ends skipped). */
export const CHAOS_RATE_LIMIT = { limit: 2, periodSeconds: 60 } as const;
/** The debounce: one run per key after 3 s of quiet, or 10 s after the window opened. */
export const CHAOS_DEBOUNCE = { periodSeconds: 3, maxWaitSeconds: 10 } as const;

/** One flow-controlled type of the run. */
export interface FlowType {
  type: string;
  /** Keys its jobs spread over. */
  keys: number;
  /** Its jobs take their keys in runs of this many, so that each key gets bursts. @default 1 */
  run?: number;
  /**
   * Its first this many jobs are sent on one key in one batch call, due now: more than its flow
   * lets through at once, so that the run's coverage check of it holds however slow the machine.
   * @default none
   */
  burst?: number;
  flow: NonNullable<ProbeJobOptions['flow']>;
  /** Priorities (a throttled type's jobs then wait in its key's line, by rank). @default none */
  priority?: NonNullable<ProbeJobOptions['priority']>;
}

/** A GCRA-paced type: its starts (throttle) or its accepted jobs (rate limit) obey the bound. */
export interface PacedType {
  type: string;
  kind: 'throttle' | 'rateLimit';
  intervalMs: number;
  burst: number;
}

/**
 * The flow types for `jobs` flow-controlled jobs (spread evenly over the types): keys few enough
 * that lines form, waits and skips happen in a small run, and a large run still drains.
 */
export function flowTypes(jobs: number): FlowType[] {
  const perType = Math.max(1, Math.ceil(jobs / 6));
  const singletonKeys = Math.max(3, Math.ceil((perType * 3) / 40));
  return [
    { type: 'flo-q', keys: singletonKeys, flow: { singleton: { mode: 'queue', scope: SINGLETON_SCOPE, key: tag } } },
    { type: 'flo-k', keys: singletonKeys, flow: { singleton: { mode: 'skip', scope: SINGLETON_SCOPE, key: tag } } },
    {
      type: 'flo-x',
      keys: singletonKeys,
      flow: { singleton: { mode: 'cancel-running', scope: SINGLETON_SCOPE, key: tag } },
    },
    // in runs of 10: a key's jobs come in bursts that fill its throttle
    // a burst of 10: 8 beyond the throttle's burst of 2 must wait (unless 16 s passed between their claims)
    // with priorities: its jobs wait in their key's line, and a free turn goes to the best rank
    {
      type: 'flo-t',
      keys: Math.ceil(perType / 20),
      run: 10,
      burst: 10,
      flow: { throttle: { ...CHAOS_THROTTLE, key: tag } },
      priority: { default: 0, agingSeconds: 2 },
    },
    {
      type: 'flo-r',
      keys: Math.max(2, Math.ceil(perType / 30)),
      // a burst of 4 in one call: 2 beyond the limit of 2 a minute are skipped
      burst: 4,
      flow: { rateLimit: { ...CHAOS_RATE_LIMIT, key: tag } },
    },
    // in runs of 8: a key's jobs come in bursts for its debounce to absorb
    // a burst of 4 in one call (well within the 3 s of quiet): all but one absorbed
    {
      type: 'flo-d',
      keys: Math.ceil(perType / 40),
      run: 8,
      burst: 4,
      flow: { debounce: { ...CHAOS_DEBOUNCE, key: tag } },
    },
  ];
}

/**
 * The planned line on the singleton scope: a `queue` job holds a key while a `queue` job (it
 * must wait) and a `skip` job (it must be skipped) arrive, then a `cancel-running` job (it
 * must cancel the holder).
 */
export function singletonLines(types: readonly FlowType[]): PlannedLine[] {
  const mode = (m: string) => types.find((f) => f.flow.singleton?.mode === m)?.type;
  const queue = mode('queue');
  const skip = mode('skip');
  const cancel = mode('cancel-running');
  if (!queue || !skip || !cancel) return [];
  return [{ holderType: queue, holders: 1, stages: [[queue, skip], [cancel]] }];
}

/** The paced types among `types`, with their GCRA parameters. */
export function pacedTypes(types: readonly FlowType[]): PacedType[] {
  const out: PacedType[] = [];
  const add = (type: string, kind: PacedType['kind'], pace: { intervalMs: number }, burst: number) =>
    out.push({ type, kind, intervalMs: pace.intervalMs, burst });
  for (const { type, flow } of types) {
    if (flow.throttle) add(type, 'throttle', throttlePace(flow.throttle), flow.throttle.burst ?? 1);
    if (flow.rateLimit) add(type, 'rateLimit', rateLimitPace(flow.rateLimit), flow.rateLimit.limit);
  }
  return out;
}
