/**
 * Job states and the transitions between them. The DynamoDB adapter's condition
 * expressions enforce the same table, so an illegal change is refused by the database,
 * not only by this code.
 */
export const JOB_STATES = [
  'scheduled',
  'queued',
  'running',
  'retrying',
  /**
   * Waits for something other than its time alone: the end of a `ctx.sleep`, a signal for a
   * `ctx.waitForSignal` (or its timeout), or its parents (`dependsOn`). It holds no lease and no
   * attempt; it starts again like a retry once it is due (and has no parent left to wait for).
   */
  'waiting',
  /**
   * Stopped for an operator: its attempt failed because its replay diverged from its journal
   * (`NondeterminismError`, reason `nondeterministic`: the code changed under a run in flight).
   * Not terminal: no `onFailure` runs and its dependants are not released. It holds no lease, no
   * slot and no due time, and nothing moves it but an operator's retry or rerun (back to
   * `queued`) or cancel (`cancelled`, which releases its dependants by their edges' policies).
   */
  'held',
  'succeeded',
  'failed',
  'cancelled',
  /** Not started before its `dispatchBy` deadline; never ran. */
  'expired',
  /**
   * Never ran, on purpose: flow control turned it away (a `skip` singleton found its key running,
   * or a rate limit was spent). `skipReason` on the job says which.
   */
  'skipped',
] as const;

export type JobState = (typeof JOB_STATES)[number];

export const TERMINAL_STATES: readonly JobState[] = ['succeeded', 'failed', 'cancelled', 'expired', 'skipped'];

/** States from which a worker may claim the job (start an attempt). */
export const CLAIMABLE_STATES: readonly JobState[] = ['scheduled', 'queued', 'retrying', 'waiting'];

/**
 * Every allowed transition. `running → running` is a takeover of an expired lease.
 * A `scheduled` job goes through `queued` when its schedule hands it to SQS; a worker that
 * receives it first claims it directly (the two steps in one conditional write).
 * A job that was never started moves to `expired` when a worker finds its `dispatchBy` passed,
 * and to `skipped` when flow control turns it away before its first attempt. A running attempt
 * that sleeps or waits for a signal ends as `waiting` (its attempt given back); a job that waits
 * for its parents is created `waiting`, and their release makes it `queued` (or ends it, by the
 * edge's policy). An attempt whose replay diverged from its journal ends `held`; an operator's
 * retry or rerun makes it `queued`, a cancel `cancelled`.
 */
export const TRANSITIONS: Readonly<Record<JobState, readonly JobState[]>> = {
  scheduled: ['queued', 'running', 'cancelled', 'expired', 'skipped'],
  queued: ['running', 'cancelled', 'expired', 'skipped'],
  running: ['succeeded', 'retrying', 'waiting', 'failed', 'held', 'cancelled', 'running'],
  retrying: ['running', 'failed', 'cancelled'],
  waiting: ['running', 'queued', 'failed', 'cancelled'],
  // only an operator moves it: a retry or rerun (queued), or a cancel
  held: ['queued', 'cancelled'],
  succeeded: [],
  failed: [],
  cancelled: [],
  expired: [],
  skipped: [],
};

export function isTerminal(state: JobState): boolean {
  return TERMINAL_STATES.includes(state);
}

/**
 * States nothing but an operator moves a job out of: the terminal ones, and `held`. No worker,
 * message or sweep starts such a job again, so a job in one needs no due time, holds no lease
 * and no slot, and a line or schedule that waits for it stops waiting.
 */
export const SETTLED_STATES: readonly JobState[] = [...TERMINAL_STATES, 'held'];

/** Whether only an operator may move a job in `state` on (a terminal state, or `held`). */
export function isSettled(state: JobState): boolean {
  return SETTLED_STATES.includes(state);
}

export function canTransition(from: JobState, to: JobState): boolean {
  return TRANSITIONS[from].includes(to);
}
