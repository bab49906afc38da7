/**
 * Invariant 18 of the system chaos run: fair share. A type whose concurrency limit is shared
 * fairly between tenants (`fairBy: (p) => p.tenant`, one tenant of weight 3), with one noisy
 * tenant that sends most of its jobs, must not let a tenant hold more than its weighted share of
 * a key while another tenant waits on it, within one hand-off.
 *
 * "Within one hand-off", precisely: at every place given on a slot (a hand-on, logged by the
 * admitter as "handed a place in line on"; a place taken at enqueue, logged by the API as "took a
 * place at enqueue"; or a job's direct take on delivery, seen as a start with no hand-on since its
 * previous start) to a job of tenant X, for every other tenant Y with a job
 * waiting in the slot's line (it logged "waiting for a concurrency slot" more than `marginMs`
 * before, and was neither handed a place, nor started, nor cancelled since (for a join the API's
 * enqueue logged, ever before: its line may come long after the join); and its next start,
 * if any, follows a hand-on logged to it: one with none had its place from an admission whose
 * line was lost, at an unknown time), it must hold that
 *
 *     before(X) / w(X) <= (running(Y) + 1) / w(Y)
 *
 * where before(X) is the least number of places X held, the new one aside, over the hand-off in
 * flight (`marginMs` before the place), and running(Y) the most Y held over that time and as long
 * after (a take or a release of Y not yet visible). The `+ 1` is the one hand-off: a place in
 * flight to Y (handed, or taken, and not yet seen) may be missing from the evidence. So a tenant
 * may be one place ahead of its share, never two.
 *
 * Everything comes from evidence that does not go through the admitter's choice: the tenant of
 * each job from the plan (its payload), its places from its handler's executions (the tracker),
 * the hand-ons to it from the log lines, and its joins from its own log lines. A place handed on
 * and not yet started counts from its hand-on until its start, a cancel of it, or a hand-on it
 * makes itself (a job that ended while it was handed its place gives it back and hands it on), at
 * most `inFlightMs`. The check never calls `chooseFairKey`.
 */
import type { ConcurrencyLimit } from '../../shared/core/flow';
import { fnv1a } from '../../shared/core/table';
import type { ProbePayload } from '../support/probes';
import type { SystemObserver } from './system-observer';
import type { PlannedJob, PlannedLine } from './system-plan';

/** The fair type: its jobs' fair key is `payload.tenant`; its limit has no key function (its slot's key is `*`). */
export const FAIR_TYPE = 'sys-f';
/** Its concurrency limit, shared fairly by the tenants. */
export const FAIR_LIMIT = 4;
/** The tenants: t0 is the noisy one; t1 pays for three times the share. */
export const FAIR_TENANTS = ['t0', 't1', 't2', 't3'] as const;
/** A tenant's weight. */
export const fairWeight = (tenant: string) => (tenant === 't1' ? 3 : 1);
/**
 * Its planned line (on its one key): {@link FAIR_LIMIT} jobs of the noisy tenant hold every place
 * while the followers arrive in one batch call (the noisy tenant's first) and wait behind them, for
 * longer than the hand-off in flight; then the holders are let go (system-limits.ts: the operator
 * lowers the limit meanwhile), and each place freed goes to a tenant while others wait: the cases
 * of invariant 18, however the run is timed.
 */
export const FAIR_FOLLOWERS: readonly string[] = [...Array(6).fill('t0'), 't1', 't1', 't1', 't2', 't2', 't3'];

/** The planned line of the fair type: see {@link FAIR_FOLLOWERS}. */
export function fairLine(): PlannedLine {
  return { holderType: FAIR_TYPE, holders: FAIR_LIMIT, stages: [FAIR_FOLLOWERS.map(() => FAIR_TYPE)] };
}

/** The fair type's concurrency limit (a fair limit takes no key function: it shares one limit between keys). */
export function fairConcurrency(): ConcurrencyLimit<ProbePayload>[] {
  return [{ limit: FAIR_LIMIT, fairBy: (p) => p.tenant ?? 'none', weight: fairWeight }];
}

/**
 * Gives the fair type's planned jobs their tenants (from their ids: no draw, so the rest of a
 * seed's plan is the same): the holders of its line the noisy t0 (held on every attempt), its followers as
 * {@link FAIR_FOLLOWERS}, each at least 1 s long so that the line lasts under the lowered limit
 * (none is killed: a line takes no job with a kill); the rest 60 % noisy t0, 20 % t1, 10 % t2,
 * 10 % t3.
 */
export function assignTenants(jobs: PlannedJob[]): void {
  const holders = new Set(jobs.flatMap((j) => j.arrival?.holders ?? []));
  let f = 0;
  for (const job of jobs) {
    if (holders.has(job.id)) {
      job.payload.tenant = 't0';
      // held on every attempt: a holder whose lease was lost under faults is taken over on its
      // place and holds again, until the line goes on
      job.payload.holdOnAttempts = Array.from({ length: job.maxAttempts }, (_, i) => i + 1);
      continue;
    }
    if (job.arrival !== undefined && f < FAIR_FOLLOWERS.length) {
      job.payload.tenant = FAIR_FOLLOWERS[f++];
      job.payload.sleepMs = Math.max(job.payload.sleepMs ?? 0, 1000);
      continue;
    }
    const h = fnv1a(job.id) % 10;
    job.payload.tenant = h < 6 ? 't0' : h < 8 ? 't1' : h < 9 ? 't2' : 't3';
  }
}

/** One handler execution: real ms. */
export interface ExecutionSpan {
  startedAt: number;
  endedAt?: number;
  end?: string;
}

/** A limit change through the API: its admission hands places on and logs no hand-on. */
export interface ApiHandOn {
  /** When the call was sent and answered (real ms): the places were handed in between. */
  from: number;
  to: number;
  /** The jobs its answer named (an answer lost on the way names none). */
  jobs: readonly string[];
}

export interface FairShareInput {
  /** The slot scope of the fair limit (`<type>#0`). */
  scope: string;
  /** The fair type's planned jobs: `payload.tag` is the slot key (`*` without one), `payload.tenant` the fair key. */
  jobs: readonly PlannedJob[];
  executions: ReadonlyMap<string, readonly ExecutionSpan[]>;
  weightOf(tenant: string): number;
  /** The hand-off in flight (real ms). */
  marginMs: number;
  /** How long a place handed on counts before its job starts, at most (real ms). */
  inFlightMs: number;
  apiHandOns?: readonly ApiHandOn[];
}

export interface FairShareResult {
  /** Places given while another tenant waited on the key (the cases the rule constrains). */
  checked: number;
  /** Places given in all. */
  places: number;
  /** `related`: the job seen waiting, and jobs whose places were counted to the in-flight bound (never started, never ended by a line the checker reads): their stories show why. */
  violations: { subject: string; detail: string; related: string[] }[];
}

interface Interval {
  job: string;
  from: number;
  to: number;
}

/** Checks invariant 18 on what the run saw. */
export function checkFairShare(observer: SystemObserver, input: FairShareInput): FairShareResult {
  const planned = new Map(input.jobs.map((j) => [j.id, j]));
  const M = input.marginMs;
  const handOns = new Map<string, number[]>();
  /** The hand-ons each job made itself (it gave its place back, or held none, and handed one on). */
  const gaveOn = new Map<string, number[]>();
  const joins = new Map<string, number[]>();
  /** The joins logged by the API's enqueue (`at: 'enqueue'`): see {@link waits}. */
  const enqueueJoins = new Map<string, number[]>();
  const push = (into: Map<string, number[]>, id: string, t: number) => into.set(id, [...(into.get(id) ?? []), t]);
  for (const [jobId, lines] of observer.logs) {
    for (const l of lines) {
      if (l.fields.scope !== input.scope) continue;
      const to = l.fields.to;
      if (l.message === 'handed a place in line on' && typeof to === 'string' && planned.has(to)) {
        push(handOns, to, l.t);
        push(gaveOn, jobId, l.t);
      }
      if (l.message === 'waiting for a concurrency slot' && planned.has(jobId)) {
        push(joins, jobId, l.t);
        if (l.fields.at === 'enqueue') push(enqueueJoins, jobId, l.t);
      }
      // a look freed the place of a job that never gave it back (ended, gone, or waiting for its
      // retry), or its job (or its enqueue, the message not sent) gave it back with nobody in line
      // to hand it on to: its place ends there
      const holder = l.fields.holder;
      const released =
        l.message === 'freed a concurrency slot its job never gave back' ||
        l.message === 'gave back a concurrency slot';
      if (released && typeof holder === 'string') push(gaveOn, holder, l.t);
      // a place taken at enqueue is held from then on, as one handed on (the job starts later, on its message)
      if (l.message === 'took a place at enqueue' && planned.has(jobId)) push(handOns, jobId, l.t);
    }
  }
  const startsOf = (id: string) => (input.executions.get(id) ?? []).map((e) => e.startedAt).sort((a, b) => a - b);
  const sortedExecutions = (id: string) =>
    [...(input.executions.get(id) ?? [])].sort((a, b) => a.startedAt - b.startedAt);
  // Places a limit change's own admission handed on (it logs none): the ones its answer named,
  // and, since an answer may be lost (the call is sent again), every start of a job that joined
  // the line since its previous start with no hand-on logged or named in between, while or after
  // a change was under way: the last change begun before the start handed it its place (a job
  // that waited through an earlier one, a lowering say, held nothing then), at the earliest once
  // both had begun.
  const windows = input.apiHandOns ?? [];
  const apiHanded = new Map<string, number[]>();
  for (const a of windows) for (const id of a.jobs) push(apiHanded, id, a.from);
  for (const id of planned.keys()) {
    const execs = sortedExecutions(id);
    execs.forEach((e, i) => {
      const since = execs[i - 1]?.startedAt ?? Number.NEGATIVE_INFINITY;
      const handed = [...(handOns.get(id) ?? []), ...(apiHanded.get(id) ?? [])];
      if (handed.some((h) => h > since && h <= e.startedAt)) return;
      const joined = (joins.get(id) ?? []).filter((j) => j > since && j < e.startedAt);
      if (joined.length === 0) return;
      const first = Math.min(...joined);
      const change = windows
        .filter((w) => w.from < e.startedAt && w.to > first - M)
        .reduce<ApiHandOn | undefined>((last, w) => (last === undefined || w.from > last.from ? w : last), undefined);
      if (change) push(apiHanded, id, Math.max(first, change.from));
    });
  }
  const cancels = (id: string) => (observer.acks.get(id) ?? []).filter((a) => a.via === 'cancel').map((a) => a.at);

  // every place, per slot key: executions, and places handed on until their job starts
  const places = new Map<string, Interval[]>();
  const addPlace = (id: string, from: number, to: number) => {
    const key = planned.get(id)?.payload.tag ?? '*';
    places.set(key, [...(places.get(key) ?? []), { job: id, from, to }]);
  };
  for (const id of planned.keys()) {
    const starts = startsOf(id);
    for (const e of input.executions.get(id) ?? []) addPlace(id, e.startedAt, e.endedAt ?? Number.POSITIVE_INFINITY);
    const runs = input.executions.get(id) ?? [];
    for (const h of [...(handOns.get(id) ?? []), ...(apiHanded.get(id) ?? [])]) {
      // a job holds one place per slot: a place handed to it while it runs (a stale entry of its
      // own admitted, a limit change's admission named) is the place it runs on, counted by the run
      if (runs.some((e) => e.startedAt <= h && h < (e.endedAt ?? Number.POSITIVE_INFINITY))) continue;
      // until the job starts on it, or an operator's cancel gives it back (the job never starts),
      // or the job hands a place on itself before it starts: a job that ended while it was handed
      // its place (cancelled, the cancel's answer lost) gives it back and hands it on; any other
      // hand-on of its own is a release, or a look at the line while it waits: it holds no place
      const next = starts.find((s) => s > h) ?? Number.POSITIVE_INFINITY;
      const cancel = cancels(id).find((c) => c > h) ?? Number.POSITIVE_INFINITY;
      const gave = (gaveOn.get(id) ?? []).find((g) => g > h) ?? Number.POSITIVE_INFINITY;
      addPlace(id, h, Math.min(next, cancel, gave, h + input.inFlightMs));
    }
  }
  const tenantOf = (id: string) => planned.get(id)?.payload.tenant ?? 'none';
  /** Distinct jobs of `tenant` (but `except`) with a place at `t`. */
  const runningAt = (list: Interval[], tenant: string, t: number, except?: string) =>
    new Set(
      list.filter((p) => p.job !== except && tenantOf(p.job) === tenant && p.from <= t && t < p.to).map((p) => p.job),
    ).size;
  const extreme = (
    list: Interval[],
    tenant: string,
    from: number,
    to: number,
    pick: 'min' | 'max',
    except?: string,
  ) => {
    const times = [from, to, ...list.flatMap((p) => [p.from, p.to]).filter((t) => t > from && t < to)];
    const counts = times.map((t) => runningAt(list, tenant, t, except));
    return pick === 'min' ? Math.min(...counts) : Math.max(...counts);
  };
  /**
   * Whether `id` waited in line over all of `[a - M, a]`. Not when its place came unlogged: it
   * started next with no hand-on since it joined (an admission applied whose line was lost: the
   * admitter's answers lost, or the admitter killed), so its place came at some time before that
   * start, perhaps before `a`. A job in line takes no place itself: its delivery finds its entry
   * and waits on.
   *
   * A join logged by the API's enqueue may have been applied long before its line: the request
   * logs it once its turn's other takes and joins, and the job's `waitingFor` write, are answered,
   * under the API's latency (a small run logged one 16 s after the job was handed the entry's
   * place). And that request created the job: anything the job did at its slot before the line
   * (a replay of the request sent it, and it was handed a place, or ran) may have come after the
   * join, its entry consumed (a job that ended gives back the place its entry was handed). So a
   * hand-on, start or cancel of the job at any time before such a line ends its wait too.
   */
  const waits = (id: string, a: number) =>
    (joins.get(id) ?? []).some((j) => {
      if (j >= a - M) return false;
      const handed = [...(handOns.get(id) ?? []), ...(apiHanded.get(id) ?? [])];
      const left = [...handed, ...startsOf(id), ...cancels(id)];
      const since = enqueueJoins.get(id)?.includes(j) ? Number.NEGATIVE_INFINITY : j - M;
      if (left.some((t) => t > since && t <= a)) return false;
      const next = startsOf(id).find((s) => s > a);
      return next === undefined || handed.some((h) => h > a && h <= next);
    });

  // every place given: a hand-on, or a start with no hand-on since the job's previous start
  const given: { job: string; at: number; how: string }[] = [];
  // a hand-on to a job while it runs is the place it runs on (a replayed enqueue's take answering
  // "held", a stale entry of its own): no place is given
  const running = (id: string, t: number) =>
    (input.executions.get(id) ?? []).some((e) => e.startedAt <= t && t < (e.endedAt ?? Number.POSITIVE_INFINITY));
  for (const [id, times] of handOns) {
    for (const t of times) if (!running(id, t)) given.push({ job: id, at: t, how: 'handed a place' });
  }
  for (const id of planned.keys()) {
    const execs = sortedExecutions(id);
    execs.forEach((e, i) => {
      const prev = execs[i - 1];
      // a start after a killed, aborted or open execution may go on under that one's place
      if (prev && (prev.end === undefined || prev.end === 'killed' || prev.end === 'aborted')) return;
      const since = prev?.startedAt ?? Number.NEGATIVE_INFINITY;
      const handed = [...(handOns.get(id) ?? []), ...(apiHanded.get(id) ?? [])].some(
        (h) => h > since && h <= e.startedAt,
      );
      if (!handed) given.push({ job: id, at: e.startedAt, how: 'took a place' });
    });
  }
  // places given while a change was under way are not checked: its admission's are not logged
  const inApiWindow = (t: number) => windows.some((a) => t >= a.from - M && t <= a.to + M);

  let checked = 0;
  const violations: FairShareResult['violations'] = [];
  const at = (ms: number) => `+${((ms - observer.t0) / 1000).toFixed(2)}s`;
  for (const g of given.sort((a, b) => a.at - b.at)) {
    if (inApiWindow(g.at)) continue;
    const key = planned.get(g.job)?.payload.tag ?? '*';
    const list = places.get(key) ?? [];
    const x = tenantOf(g.job);
    const waiting = new Map<string, string>();
    for (const other of planned.values()) {
      const y = other.payload.tenant ?? 'none';
      if (y === x || waiting.has(y) || (other.payload.tag ?? '*') !== key) continue;
      if (waits(other.id, g.at)) waiting.set(y, other.id);
    }
    if (waiting.size === 0) continue;
    checked += 1;
    const before = extreme(list, x, g.at - M, g.at, 'min', g.job);
    for (const [y, job] of waiting) {
      const running = extreme(list, y, g.at - M, g.at + M, 'max');
      if (before / input.weightOf(x) <= (running + 1) / input.weightOf(y)) continue;
      // the places counted for each side, so that a story shows where the counts came from
      const counted = (tenant: string, from: number, to: number, except?: string) =>
        list
          .filter((p) => p.job !== except && tenantOf(p.job) === tenant && p.from < to && p.to > from)
          .map((p) => `${p.job} ${at(p.from)}→${Number.isFinite(p.to) ? at(p.to) : 'open'}`)
          .join(', ');
      const bounded = list.filter(
        (p) =>
          p.job !== g.job &&
          tenantOf(p.job) === x &&
          p.to - p.from >= input.inFlightMs &&
          p.from < g.at &&
          p.to > g.at - M,
      );
      violations.push({
        subject: g.job,
        // and the job seen waiting: whether it truly waited is in its story
        related: [...new Set([...bounded.map((p) => p.job), job])],
        detail: `${g.how} of ${input.scope} key ${key} at ${at(g.at)} for tenant ${x} (weight ${input.weightOf(x)}), which already held ${before}, while tenant ${y} (weight ${input.weightOf(y)}) held at most ${running} and its job ${job} waited in line: ${before}/${input.weightOf(x)} > (${running} + 1)/${input.weightOf(y)} [${x}: ${counted(x, g.at - M, g.at, g.job)}; ${y}: ${counted(y, g.at - M, g.at + M)}]`,
      });
    }
  }
  return { checked, places: given.length, violations };
}
