/**
 * Invariant 17 of the system chaos run: a type with priorities serves its lines by rank. From
 * the workers' log lines (a job's "waiting for a concurrency slot" names the rank it joined
 * under; an admitter's "handed a place in line on" names the job and rank it served):
 * - a place is never handed to a job while a job of a lower rank (served first) had waited in
 *   the same line for longer than `marginMs` and had not been handed one since: the margin is
 *   the hand-off in flight (an admitter reads the line's head, then writes: a job that joined
 *   meanwhile is not passed over, it came too late for that hand-off), and the time between a
 *   job's join and its "waiting" line (an admission of it within it counts as served);
 * - no job of the type ever takes a ticket of the oldest-first line.
 *
 * The same rule holds for a throttle's line (a throttled type with priorities, `line:
 * 'throttle'`): a job's "waiting in its throttle line" names the rank it joined under, and its
 * own "took a turn of its throttle line" the rank it took a turn under. A turn is never taken by
 * a job while a job of a lower rank had waited in the same line for longer than `marginMs`. A
 * job's turn may have been taken before its line says so, by as long as the take's call took
 * (its `takeMs`: a take whose answers were lost is found applied after the SDK's retries), up to
 * `marginMs`: it counts as served from then.
 *
 * A job whose next start came with no admission of it logged since it joined is no witness of
 * waiting: its place was handed on by an admission whose line was lost (the admitter's answers
 * lost, or the admitter killed after its write), at some time before that start.
 *
 * A job that left its line with no place waits no more from then: one taken out of a throttle's
 * line by another job's gate ("took out of its throttle line a job that will not come", which
 * names the line and rank), or one cancelled (its entry may stay until a gate takes it out, and
 * no turn passes it meanwhile: the gate takes the head out first). A job retried after it joins
 * again, and waits from its new join.
 */
import type { SystemObserver } from './system-observer';

export interface RankedLineInput {
  /** The slot scope of the type's limit (`<type>#0`), or the pace scope of its throttle (`<type>~t`). */
  scope: string;
  /** Which line: a concurrency slot's (the default) or a throttle's. */
  line?: 'slot' | 'throttle';
  /** Tickets its slots issued, read at the end: must be 0 (a slot's line). */
  ticketsIssued: number;
  /** The hand-off in flight (real ms). */
  marginMs: number;
}

export interface RankedLineResult {
  checked: number;
  violations: { subject: string; detail: string }[];
}

interface Event {
  t: number;
  job: string;
  rank: string;
  /** An admission: the earliest it may have been made (`t`, less the time its take's call took). */
  from?: number;
}

/** Checks invariant 17 on what the observer saw. */
export function checkRankedOrder(observer: SystemObserver, input: RankedLineInput): RankedLineResult {
  const violations: RankedLineResult['violations'] = [];
  const joins = new Map<string, Event[]>();
  const admissions = new Map<string, Event[]>();
  const add = (into: Map<string, Event[]>, line: string, e: Event) => into.set(line, [...(into.get(line) ?? []), e]);
  /** When each job left its lines without a place: taken out of one (per key), or cancelled (all). */
  const left = new Map<string, Event[]>();
  /** When each job's attempts started. */
  const starts = new Map<string, number[]>();
  const throttle = input.line === 'throttle';
  for (const [jobId, lines] of observer.logs) {
    for (const l of lines) {
      if (l.message === 'job cancelled') add(left, `${jobId}\n*`, { t: l.t, job: jobId, rank: '' });
      if (l.message === 'attempt started') starts.set(jobId, [...(starts.get(jobId) ?? []), l.t]);
      const { scope, key, rank } = l.fields;
      if (scope !== input.scope || typeof key !== 'string' || typeof rank !== 'string') continue;
      if (throttle) {
        if (l.message === 'waiting in its throttle line') add(joins, key, { t: l.t, job: jobId, rank });
        // another job's gate took this one out: it will not come (cancelled, ended, or gone)
        if (l.message === 'took out of its throttle line a job that will not come')
          add(left, `${jobId}\n${key}`, { t: l.t, job: jobId, rank });
        if (l.message === 'took a turn of its throttle line') {
          const takeMs =
            typeof l.fields.takeMs === 'number' ? Math.min(Math.max(0, l.fields.takeMs), input.marginMs) : 0;
          add(admissions, key, { t: l.t, job: jobId, rank, from: l.t - takeMs });
        }
        continue;
      }
      if (l.message === 'waiting for a concurrency slot') add(joins, key, { t: l.t, job: jobId, rank });
      const to = l.fields.to;
      if (l.message === 'handed a place in line on' && typeof to === 'string')
        add(admissions, key, { t: l.t, job: to, rank });
    }
  }
  let checked = 0;
  const t = (ms: number) => `+${((ms - observer.t0) / 1000).toFixed(2)}s`;
  for (const [key, served] of admissions) {
    const waited = joins.get(key) ?? [];
    for (const a of served) {
      checked += 1;
      // each job's latest join before this hand-off, unless it was handed a place since
      const latest = new Map<string, Event>();
      for (const j of waited) if (j.t < a.t && (latest.get(j.job)?.t ?? -1) < j.t) latest.set(j.job, j);
      for (const [job, j] of latest) {
        if (job === a.job || j.rank >= a.rank || j.t >= a.t - input.marginMs) continue;
        // served meanwhile: its admission may even come before its own "waiting" line, which is
        // logged after its join, its wait's mark and its look at the holders; and a turn it took
        // may be logged after this one, when its take's call took longer (lost answers)
        const servedSince = served.some((o) => o.job === job && o.t > j.t - input.marginMs && (o.from ?? o.t) <= a.t);
        if (servedSince) continue;
        // left the line since it joined, with no place: it waits no more
        const gone = [...(left.get(`${job}\n${key}`) ?? []), ...(left.get(`${job}\n*`) ?? [])];
        if (gone.some((g) => g.t > j.t && g.t <= a.t)) continue;
        // its place came unlogged: it started next with no admission of it logged since it joined
        // (an admission applied whose line was lost: the admitter's answers lost, or the admitter
        // killed after its write), so at some time before that start, perhaps before this one. A
        // job in line takes no place itself: its delivery finds its entry and waits on
        const next = (starts.get(job) ?? []).find((s) => s > j.t);
        if (next !== undefined && !served.some((o) => o.job === job && o.t > j.t - input.marginMs && o.t <= next)) {
          continue;
        }
        // what the passed-over job's own lines say, to tell where its place went
        const its = (observer.logs.get(job) ?? [])
          .map((l) => `${t(l.t)} ${l.message}${typeof l.fields.to === 'string' ? ` to ${l.fields.to}` : ''}`)
          .join('; ');
        violations.push({
          subject: a.job,
          detail: `${throttle ? 'took a turn' : 'handed a place'} of ${input.scope} key ${key} at ${t(a.t)} under rank ${a.rank}, while ${job} had waited since ${t(j.t)} under the lower rank ${j.rank} (its lines: ${its})`,
        });
      }
    }
  }
  checked += 1;
  if (input.ticketsIssued > 0) {
    violations.push({
      subject: input.scope,
      detail: `the slots of ${input.scope}, a type with priorities, issued ${input.ticketsIssued} tickets of the oldest-first line`,
    });
  }
  return { checked, violations };
}
