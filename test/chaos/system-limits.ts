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
 */
import { OrreryApiError, type OrreryClient } from '../../shared/client/index';
import type { ApiHandOn, ExecutionSpan } from './system-fair';
import type { SystemObserver } from './system-observer';
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
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const until = async (done: () => boolean, ms: number) => {
    const end = Date.now() + ms;
    while (!done() && Date.now() < end) await sleep(100);
  };
  const call = async (
    change: Omit<LimitChange, 'sentAt' | 'handedOn'>,
    send: () => Promise<{ handedOn: string[] }>,
  ) => {
    const record: LimitChange = { ...change, sentAt: Date.now(), handedOn: [] };
    changes.push(record);
    for (let t = 0; t < TRIES; t++) {
      try {
        const answer = await send();
        record.ackAt = Date.now();
        record.handedOn = answer.handedOn;
        return;
      } catch (error) {
        if (error instanceof OrreryApiError && error.status < 500 && error.status !== 429) return;
        await sleep(200 + t * 300);
      }
    }
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
