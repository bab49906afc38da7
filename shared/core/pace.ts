/**
 * Throttles and rate limits, domain side: both count starts per key with GCRA (the generic cell
 * rate algorithm), which keeps one number per key, its theoretical arrival time (TAT). No AWS
 * here: the DynamoDB adapter is `shared/aws/dynamo-pacer.ts`; docs/flow-control.md explains the
 * design and what each path costs.
 *
 * With an emission interval T = period / limit and a tolerance τ = (burst − 1) · T, a start at
 * time t conforms when t ≥ TAT − τ, and moves TAT to max(TAT, t) + T. So in any window of length
 * L, at most `burst + L / T` starts conform, and a key left quiet for `burst · T` may burst again.
 * - A **throttle** queues the excess: a job takes the next turn, `max(now, TAT − τ)`, and waits
 *   for it (nothing is lost).
 * - A **rate limit** drops the excess: a job that does not conform now ends `skipped`.
 */
import { computeFlowKey, WHOLE_TYPE_KEY } from './flow';

/** Largest `limit` of a throttle or rate limit. */
export const MAX_PACE_LIMIT = 10_000;
/** Longest `periodSeconds`: a day. */
export const MAX_PACE_PERIOD_SECONDS = 86_400;
/** Largest `burst`. */
export const MAX_BURST = 1_000;
/**
 * A throttled job that comes to its turn later than this (its worker was busy, its message slow)
 * takes a new turn instead of starting late: so starts keep to the GCRA bound within this much.
 */
export const LATE_TURN_MS = 1_000;

/**
 * A throttle: at most `limit` starts per `periodSeconds` per key (with bursts of up to `burst`).
 * The excess waits its turn; nothing is lost.
 *
 * @example
 * // 5 calls a second per API key, bursts of 10
 * throttle: { limit: 5, periodSeconds: 1, burst: 10, key: (p) => p.apiKey }
 */
export interface ThrottleOptions<Payload = never> {
  /** Starts per period. 1 to {@link MAX_PACE_LIMIT}. */
  readonly limit: number;
  /** The period, in seconds: 1 to {@link MAX_PACE_PERIOD_SECONDS}. */
  readonly periodSeconds: number;
  /** Starts allowed at once after a quiet spell. @default 1 */
  readonly burst?: number;
  /** The key value of a job, from its payload. @default one key for the whole job type */
  key?(payload: Payload): string;
}

/**
 * A rate limit: at most `limit` jobs per `periodSeconds` per key are accepted; the excess ends
 * `skipped` (reason `rate-limit`) without running. Counted when the job is enqueued.
 *
 * @example
 * // one welcome email per user per day; repeats are dropped
 * rateLimit: { limit: 1, periodSeconds: 86_400, key: (p) => p.userId }
 */
export interface RateLimitOptions<Payload = never> {
  readonly limit: number;
  readonly periodSeconds: number;
  /** @default one key for the whole job type */
  key?(payload: Payload): string;
}

/** The GCRA parameters of a throttle or rate limit, in ms. */
export interface Pace {
  /** Emission interval T: the period divided by the limit. */
  intervalMs: number;
  /** Tolerance τ: (burst − 1) · T. */
  toleranceMs: number;
}

/** A throttle's GCRA parameters: bursts of `burst` (default 1). */
export function throttlePace(options: { limit: number; periodSeconds: number; burst?: number }): Pace {
  const intervalMs = (options.periodSeconds * 1000) / options.limit;
  return { intervalMs, toleranceMs: ((options.burst ?? 1) - 1) * intervalMs };
}

/** A rate limit's GCRA parameters: up to `limit` at once, so `limit` per period as users expect. */
export function rateLimitPace(options: { limit: number; periodSeconds: number }): Pace {
  return throttlePace({ ...options, burst: options.limit });
}

/** Checks a throttle (`what` = 'throttle') or rate limit ('rateLimit'). Returns the first problem, if any. */
export function paceProblem(value: unknown, what: 'throttle' | 'rateLimit'): string | undefined {
  if (typeof value !== 'object' || value === null) return `${what} must be an object { limit, periodSeconds, … }`;
  const { limit, periodSeconds, burst, key } = value as Record<string, unknown>;
  const int = (v: unknown, min: number, max: number) =>
    typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
  if (!int(limit, 1, MAX_PACE_LIMIT)) return `${what}.limit must be an integer from 1 to ${MAX_PACE_LIMIT}`;
  if (!int(periodSeconds, 1, MAX_PACE_PERIOD_SECONDS)) {
    return `${what}.periodSeconds must be an integer from 1 to ${MAX_PACE_PERIOD_SECONDS}`;
  }
  if (what === 'throttle' && burst !== undefined && !int(burst, 1, MAX_BURST)) {
    return `throttle.burst must be an integer from 1 to ${MAX_BURST}`;
  }
  if (what === 'rateLimit' && burst !== undefined) return 'rateLimit has no burst (use a throttle to queue bursts)';
  if (key !== undefined && typeof key !== 'function') return `${what}.key must be a function of the payload`;
  return undefined;
}

/** A job's key value for a throttle or rate limit (`label` names it in errors). */
export function resolvePaceKey(options: { key?(payload: unknown): string }, payload: unknown, label: string): string {
  if (!options.key) return WHOLE_TYPE_KEY;
  return computeFlowKey(
    options.key,
    payload,
    `${label}.key`,
    `invalid_${label === 'throttle' ? 'throttle' : 'rate_limit'}_key`,
  );
}

/** The pace scope of a job type's throttle or rate limit: `<type>~t` / `<type>~r`. */
export function paceScope(type: string, what: 'throttle' | 'rateLimit'): string {
  return `${type}~${what === 'throttle' ? 't' : 'r'}`;
}

/**
 * GCRA for a throttle: the turn a job arriving at `now` gets, and the TAT after it. Reference
 * for the adapter's two conditional writes (and for tests).
 */
export function nextTurn(tat: number | undefined, now: number, pace: Pace): { at: number; tat: number } {
  if (tat === undefined || tat <= now) return { at: now, tat: now + pace.intervalMs };
  return { at: Math.max(now, tat - pace.toleranceMs), tat: tat + pace.intervalMs };
}

/**
 * A TAT carried over a change of pace: the starts it is ahead of `now` by, under `from`, are as
 * many under `to` (a quiet key stays quiet).
 */
export function rescaleTat(tat: number | undefined, now: number, from: Pace, to: Pace): number | undefined {
  if (tat === undefined || tat <= now) return tat;
  return now + ((tat - now) / from.intervalMs) * to.intervalMs;
}

/** GCRA for a rate limit: whether a job arriving at `now` conforms, and the TAT after it. */
export function conforms(tat: number | undefined, now: number, pace: Pace): { ok: boolean; tat: number | undefined } {
  if (tat === undefined || tat <= now) return { ok: true, tat: now + pace.intervalMs };
  if (tat - pace.toleranceMs <= now) return { ok: true, tat: tat + pace.intervalMs };
  return { ok: false, tat };
}

/** Whether a turn is free at `now` (GCRA: `now ≥ TAT − τ`). */
export function turnFree(tat: number | undefined, now: number, pace: Pace): boolean {
  return tat === undefined || tat - pace.toleranceMs <= now;
}

/**
 * How long a turn of a throttle's line may stay free before a job that finds another first in
 * line sends that one its message: the job that took the last turn sends the next one its
 * message at once, so a turn free for longer means that hand-on was lost (or the job first in
 * line joined after it, ahead of the rest).
 */
export const LINE_HAND_ON_GRACE_MS = 2_000;

/** Whether a throttle's turn has been free for longer than {@link LINE_HAND_ON_GRACE_MS}. */
export function turnOverdue(tat: number | undefined, now: number, pace: Pace): boolean {
  return tat === undefined || now - (tat - pace.toleranceMs) > LINE_HAND_ON_GRACE_MS;
}

/**
 * When a job with `ahead` jobs before it in a throttle's line should come back: the key's next
 * turn, then one interval for each job ahead (each takes one turn). Only a wake-up time: the
 * turn goes to whoever is first in line when it is free.
 */
export function lineEstimate(tat: number | undefined, now: number, pace: Pace, ahead: number): number {
  const next = tat === undefined ? now : Math.max(now, tat - pace.toleranceMs);
  return next + Math.max(0, ahead) * pace.intervalMs;
}

/** A job waiting in a throttle's line (a type with priorities). */
export interface PaceLineEntry {
  jobId: string;
  type: string;
  /** Its rank key (shared/core/priority.ts): the line is served lowest first. */
  rank: string;
  /** When it joined (epoch ms), as the line reports it. */
  joinedAt?: number;
}

/**
 * What {@link Pacer.lineTurn} tells a job of a throttle's line:
 * - `go`: it took a turn now (and left the line, if it was in it): start. `next`, when given, is
 *   the job now first in line: send it its message, so that the line keeps moving however the
 *   waiting jobs' messages are hidden (one message's latency per turn);
 * - `wait`: it waits in line (joined now, or before). Come back at `until`; `head`, when given,
 *   is the job first in line, for which a turn has been free for a while
 *   ({@link turnOverdue}): send it its message, as it may be hidden until later.
 */
export type LineTurn =
  | { kind: 'go'; next?: PaceLineEntry }
  | { kind: 'wait'; until: number; joined: boolean; head?: PaceLineEntry };

/** A throttle or rate limit set at run time on one key, in place of the spec's. */
export interface RuntimePace {
  limit: number;
  periodSeconds: number;
  /** A throttle's burst (a rate limit's is its limit). */
  burst?: number;
  /** Its GCRA parameters, as the spec's would be computed ({@link throttlePace}, {@link rateLimitPace}). */
  pace: Pace;
  /** Who set it (the caller's ARN), and when (epoch ms). */
  by: string;
  at: number;
}

/**
 * Keeps the TAT of each throttle and rate-limit key. Both methods are one atomic conditional
 * write in the usual case (two when a key's state is not what the caller last saw). A pace set
 * at run time on a key ({@link Pacer.setPace}) replaces the `pace` callers give, from the next
 * call on, for every caller.
 */
export interface Pacer {
  /** Takes the next turn of the key (a throttle); returns when it is (epoch ms, ≥ `now`). */
  takeTurn(input: { scope: string; key: string; now: number; pace: Pace }): Promise<number>;
  /** Takes a start now if it conforms (a rate limit); false when the key's rate is spent. */
  tryStart(input: { scope: string; key: string; now: number; pace: Pace }): Promise<boolean>;
  /** The key's TAT (epoch ms), undefined when it never started a job. */
  state(input: { scope: string; key: string }): Promise<number | undefined>;
  /**
   * Sets the key's pace at run time (`runtime`), or removes it (undefined: `spec`, the callers'
   * pace, holds again). The starts the key is ahead by carry over, counted in starts: a TAT
   * `n` intervals ahead of `now` under the old pace is `n` intervals ahead under the new one, so
   * a lowered limit holds from the next start and a raised one allows more at once. Safe to
   * call again.
   */
  setPace(input: {
    scope: string;
    key: string;
    runtime: RuntimePace | undefined;
    spec: Pace;
    now: number;
  }): Promise<void>;
  /** The pace set at run time on the key, if any (strongly consistent). */
  runtimePace(input: { scope: string; key: string }): Promise<RuntimePace | undefined>;
  /**
   * A throttle's turn for a type with priorities: turns go to the best-ranked job waiting, not
   * in arrival order. A job takes a turn now only when one is free and it is first in line (or
   * the line is empty); otherwise it joins the key's line under `job.rank` and waits (see
   * {@link LineTurn}). Taking a turn from the line is one atomic write with leaving it, on the
   * line as read: a job that joined meanwhile (perhaps ahead) makes it read again. `inLine`: the
   * job believes it waits in this line under `job.rank` (its `waitingFor` says so).
   */
  lineTurn(input: {
    scope: string;
    key: string;
    now: number;
    pace: Pace;
    job: PaceLineEntry;
    inLine: boolean;
  }): Promise<LineTurn>;
  /** Takes out the entry of a job that will not come for its turn (it ended, or is gone); false if it was not there. */
  leaveLine(input: { scope: string; key: string; rank: string }): Promise<boolean>;
  /** The first `max` jobs of the key's line, in the order they will be served. */
  line(input: { scope: string; key: string; max: number }): Promise<PaceLineEntry[]>;
}
