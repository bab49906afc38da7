/**
 * Invariant 19 of the system chaos run: a limit changed at run time holds from the next start on.
 * An operator lowers a key's concurrency limit mid-run (`PUT /types/{type}/keys/{key}/limits`,
 * through the typed client, sent again until answered, as an operator would), while that key's
 * jobs run and wait, and later removes it (`DELETE`).
 *
 * The check: every start of a job of that key whose place was taken after the PUT was
 * acknowledged, and before the DELETE was sent, found at most the new limit of the key's jobs
 * running (itself included). Jobs that started before (or were handed their place before) may
 * finish above it. A start's place is its latest hand-on since its previous start (the
 * admitter's "handed a place in line on", or a place the DELETE's own admission handed it), or
 * else its own take, just before its start; either is counted as after the PUT only when it came
 * more than `marginMs` after the acknowledgement (the write before the log, the take before the
 * claim). A start after a killed, aborted or open execution of the same job may go on under that
 * one's place: it is not counted. Running jobs come from the handlers' executions (the tracker),
 * not from the slot the platform keeps.
 *
 * A throttle changed at run time holds likewise: an operator slows the key of the throttled
 * type's burst before the burst comes (`PUT … { throttle }`) and removes the change once the burst
 * has taken its turns (`DELETE …?field=throttle`). The turns the pacer gave under the change obey
 * its pace exactly (see {@link pacePeriods}; checked with invariant 10, system-checks.ts).
 */
import { OrreryApiError, type OrreryClient } from '../../shared/client/index';
import type { ApiHandOn, ExecutionSpan } from './system-fair';
import type { SystemObserver, Turn } from './system-observer';
import type { PlannedJob } from './system-plan';

/** One change of a key's limit through the API. */
export interface LimitChange {
  key: string;
  /** The limit set; undefined: the run-time limit was removed (the spec's holds). */
  limit?: number;
  /** Its first send (real ms). */
  sentAt: number;
  /** Its answer 200 (real ms); undefined when it was never answered. */
  ackAt?: number;
  /** The jobs its admission handed a place (the answer's `handedOn`). */
  handedOn: string[];
}

/** One change of a key's throttle through the API. */
export interface PaceChange {
  key: string;
  /** The throttle set; undefined: the run-time throttle was removed (the spec's holds). */
  throttle?: { limit: number; periodSeconds: number; burst: number };
  /** Its first send (real ms). */
  sentAt: number;
  /** Its answer 200 (real ms); undefined when it was never answered. */
  ackAt?: number;
}

/** Some of a key's throttle turns, all given under one pace. */
export interface PacePeriod {
  /** The change whose pace they were given under: none, or a removal, for the spec's. */
  change?: PaceChange;
  turns: Turn[];
}

/**
 * A key's throttle turns, by the pace they were given under: the spec's until the first change
 * was sent; a change's from its answer until the next change was sent (the spec's again after a
 * removal). A change holds once it is written, and every turn's write is conditioned on the
 * pace's version the pacer saw: so a turn asked for after a change was answered was written
 * under it, and one given before a change was sent was not. A turn asked for before a change was
 * answered and given after it was sent may be under either pace: it is in no period (nor is any
 * turn after a change that was never answered, until the next one was).
 */
export function pacePeriods(turns: readonly Turn[], changes: readonly PaceChange[]): PacePeriod[] {
  const first = changes[0]?.sentAt ?? Number.POSITIVE_INFINITY;
  const periods: PacePeriod[] = [{ turns: turns.filter((t) => t.givenAt < first) }];
  changes.forEach((change, i) => {
    const answered = change.ackAt;
    if (answered === undefined) return;
    const until = changes[i + 1]?.sentAt ?? Number.POSITIVE_INFINITY;
    periods.push({ change, turns: turns.filter((t) => t.askedAt > answered && t.givenAt < until) });
  });
  return periods;
}

export interface RuntimeLimitInput {
  /** The slot scope of the limit (`<type>#0`). */
  scope: string;
  /** The type's planned jobs: `payload.tag` is the key (`*` without one: a limit without a key function). */
  jobs: readonly PlannedJob[];
  executions: ReadonlyMap<string, readonly ExecutionSpan[]>;
  changes: readonly LimitChange[];
  /** The hand-off in flight (real ms). */
  marginMs: number;
}

export interface RuntimeLimitResult {
  checked: number;
  violations: { subject: string; detail: string }[];
}

/** The changes, as invariant 18 sees them: calls whose admissions hand places on unlogged. */
export function apiHandOns(changes: readonly LimitChange[]): ApiHandOn[] {
  return changes.map((c) => ({ from: c.sentAt, to: c.ackAt ?? Number.POSITIVE_INFINITY, jobs: c.handedOn }));
}

/** Checks invariant 19 on what the run saw. */
export function checkRuntimeLimits(observer: SystemObserver, input: RuntimeLimitInput): RuntimeLimitResult {
  const violations: RuntimeLimitResult['violations'] = [];
  const handOns = new Map<string, number[]>();
  for (const lines of observer.logs.values()) {
    for (const l of lines) {
      const to = l.fields.to;
      if (l.message !== 'handed a place in line on' || l.fields.scope !== input.scope || typeof to !== 'string')
        continue;
      handOns.set(to, [...(handOns.get(to) ?? []), l.t]);
    }
  }
  for (const c of input.changes) for (const id of c.handedOn) handOns.set(id, [...(handOns.get(id) ?? []), c.sentAt]);
  const at = (ms: number) => (Number.isFinite(ms) ? `+${((ms - observer.t0) / 1000).toFixed(2)}s` : 'open');
  let checked = 0;
  input.changes.forEach((change, i) => {
    if (change.limit === undefined || change.ackAt === undefined) return;
    const limit = change.limit;
    const from = change.ackAt + input.marginMs;
    const until = input.changes.slice(i + 1).find((c) => c.key === change.key)?.sentAt ?? Number.POSITIVE_INFINITY;
    const mine = input.jobs.filter((j) => (j.payload.tag ?? '*') === change.key);
    const spans = mine.flatMap((j) =>
      (input.executions.get(j.id) ?? []).map((e) => ({ id: j.id, start: e.startedAt, end: e.endedAt ?? Infinity })),
    );
    for (const job of mine) {
      const execs = [...(input.executions.get(job.id) ?? [])].sort((a, b) => a.startedAt - b.startedAt);
      execs.forEach((e, n) => {
        const prev = execs[n - 1];
        if (prev && (prev.end === undefined || prev.end === 'killed' || prev.end === 'aborted')) return;
        const since = prev?.startedAt ?? Number.NEGATIVE_INFINITY;
        const handed = (handOns.get(job.id) ?? []).filter((h) => h > since && h <= e.startedAt);
        const place = handed.length > 0 ? Math.max(...handed) : e.startedAt;
        if (place <= from || place >= until || e.startedAt >= until) return;
        checked += 1;
        const running = spans.filter((s) => s.start <= e.startedAt && e.startedAt < s.end);
        const jobs = new Set(running.map((s) => s.id));
        if (jobs.size <= limit) return;
        violations.push({
          subject: job.id,
          detail: `started at ${at(e.startedAt)} (its place at ${at(place)}) on ${input.scope} key ${change.key}, whose limit was lowered to ${limit} at ${at(change.ackAt ?? 0)} (acknowledged), with ${jobs.size} jobs of the key running: ${running.map((s) => `${s.id} ${at(s.start)} → ${at(s.end)}`).join(', ')}`,
        });
      });
    }
  });
  return { checked, violations };
}

/** Tries for an operator's call (answered, or a 4xx): a call that got no answer, a 5xx or a 429 is sent again. */
const TRIES = 12;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `done` every 100 ms until it holds or `ms` passed. */
async function until(done: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!done() && Date.now() < end) await sleep(100);
}

/**
 * Sends an operator's call until it is answered, as an operator would (see {@link TRIES}), and
 * notes on `record` when it was: its answer, or undefined when it got none (or a 4xx).
 */
async function untilAnswered<A>(record: { ackAt?: number }, send: () => Promise<A>): Promise<A | undefined> {
  for (let t = 0; t < TRIES; t++) {
    try {
      const answer = await send();
      record.ackAt = Date.now();
      return answer;
    } catch (error) {
      if (error instanceof OrreryApiError && error.status < 500 && error.status !== 429) return undefined;
      await sleep(200 + t * 300);
    }
  }
  return undefined;
}
/** How long after the lowered limit's acknowledgement and margin a held line goes on, at the earliest. */
const LET_GO_AFTER_MS = 1_000;

/**
 * The operator, on a planned line of the key (system-fair.ts): once the line's holders hold every
 * place (`held`; or `waitMs` passed), lowers the key's limit to `lowered`, below what they hold;
 * lets the line go on (`proceed`) a margin and a second after the acknowledgement, so that the
 * places handed on from then on are taken under the new limit and outside the call's window (the
 * cases of invariants 18 and 19); once the line has drained (or `holdMs` passed), removes it.
 */
export async function changeLimitMidRun(input: {
  client: OrreryClient;
  type: string;
  key: string;
  lowered: number;
  held: () => boolean;
  proceed: () => void;
  drained: () => boolean;
  waitMs: number;
  holdMs: number;
  marginMs: number;
}): Promise<LimitChange[]> {
  const changes: LimitChange[] = [];
  const call = async (
    change: Omit<LimitChange, 'sentAt' | 'handedOn'>,
    send: () => Promise<{ handedOn: string[] }>,
  ) => {
    const record: LimitChange = { ...change, sentAt: Date.now(), handedOn: [] };
    changes.push(record);
    record.handedOn = (await untilAnswered(record, send))?.handedOn ?? [];
  };
  try {
    await until(input.held, input.waitMs);
    await call({ key: input.key, limit: input.lowered }, () =>
      input.client.setKeyLimits(input.type, input.key, { concurrency: input.lowered }),
    );
    const acked = changes[0]?.ackAt;
    if (acked !== undefined) await sleep(Math.max(0, acked + input.marginMs + LET_GO_AFTER_MS - Date.now()));
  } finally {
    input.proceed();
  }
  await until(input.drained, input.holdMs);
  await call({ key: input.key }, () => input.client.clearKeyLimits(input.type, input.key));
  return changes;
}

/**
 * The operator of a key's throttle: sets `throttle` on the key at once (`PUT …/limits`), and
 * removes it (`DELETE …/limits?field=throttle`) once `done` holds of the time it was answered (or
 * `holdMs` passed). `set` settles once the PUT was answered, or its tries ran out: the run sends
 * the key's burst after that, so that the burst's turns are taken under the change.
 */
export function changeThrottleMidRun(input: {
  client: OrreryClient;
  type: string;
  key: string;
  throttle: { limit: number; periodSeconds: number; burst: number };
  done: (since: number) => boolean;
  holdMs: number;
}): { set: Promise<void>; changes: Promise<PaceChange[]> } {
  const changes: PaceChange[] = [];
  const call = async (change: Pick<PaceChange, 'throttle'>, send: () => Promise<unknown>) => {
    const record: PaceChange = { key: input.key, ...change, sentAt: Date.now() };
    changes.push(record);
    await untilAnswered(record, send);
    return record;
  };
  const set = call({ throttle: input.throttle }, () =>
    input.client.setKeyLimits(input.type, input.key, { throttle: input.throttle }),
  );
  const run = async () => {
    const since = await set;
    await until(() => input.done(since.ackAt ?? since.sentAt), input.holdMs);
    await call({}, () => input.client.clearKeyLimits(input.type, input.key, { field: 'throttle' }));
    return changes;
  };
  return { set: set.then(() => undefined), changes: run() };
}
