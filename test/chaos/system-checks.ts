/**
 * The invariants of the system chaos run, each counted as checked and violated, with
 * the story of every violating job or schedule.
 */

import { jobDueAt } from '../../shared/core/due';
import { runId } from '../../shared/core/fire-message';
import type { Job } from '../../shared/core/job';
import { paceScope, throttlePace } from '../../shared/core/pace';
import { isSettled, isTerminal } from '../../shared/core/states';
import { nextFireOf, type Schedule } from '../../shared/schedules/model';
import type { FaultInjector } from '../support/faults';
import { gcraExcess, gcraWorst } from '../support/gcra';
import { maxOverlap } from '../support/held-handlers';
import type { ProbeTracker } from '../support/probes';
import {
  type BatchItemsInput,
  COMPOSE_TYPE,
  checkBatchItems,
  checkEventWaits,
  checkInvokes,
  type EventWaitsInput,
  type InvokesInput,
} from './system-compose';
import { checkEvents, type EventsInput } from './system-events';
import { checkFairShare, type FairShareInput } from './system-fair';
import type { PacedType } from './system-flow';
import { checkRuntimeLimits, type PaceChange, pacePeriods, type RuntimeLimitInput } from './system-limits';
import type { SystemObserver } from './system-observer';
import type { PlannedJob, PlannedSchedule } from './system-plan';
import { checkRankedOrder, type RankedLineInput } from './system-priority';
import { WORKFLOW_TYPE, type WorkflowCheck, type WorkflowInvariant } from './system-workflows';

/** The invariants, in the order they are printed. */
export const INVARIANTS = [
  '1 acknowledged job terminal or legitimately pending',
  '2 no two executions of one job overlap',
  '3 no attempt starts before its runAt',
  '4 attempts within maxAttempts per series',
  '5 onFailure at most once per series',
  '6 every recurring slot yields one run or one recorded skip',
  '7 nothing acknowledged in the DLQ',
  '8 no more jobs of one flow key run at once than its limit',
  '9 no concurrency or singleton slot held by a finished job at the end',
  '10 throttled starts and rate-limited acceptances within the GCRA bound',
  '11 no job skipped by flow control ran; every debounced job leads to its run',
  '12 no step body runs again once a run of it completed; every run gets the recorded result',
  '13 a child starts only after its parents ended, and as its edge policies say',
  '14 no job reads an entry written by another incarnation of its id',
  '15 every signal accepted with 2xx is returned by its wait, or was answered late',
  '16 every waiting job resumes within its stated bound, and every workflow written ends',
  '17 a type with priorities hands each freed place or throttle turn to the lowest rank waiting, and takes no ticket',
  "18 a slot's key never holds more than its weighted share while another key waits (within one hand-off)",
  '19 a limit changed at run time holds from the next start on',
  '20 each event accepted with 2xx makes exactly one job per subscriber',
  '21 each invoked child is created once per name and ends; its parent resumes after it ended and sees its outcome',
  '22 a waitForEvent returns a matching event sent after its job was created, or times out with none lost',
  '23 a batch item never runs again after its outcome was recorded, and each outcome is recorded once',
] as const;
export type Invariant = (typeof INVARIANTS)[number];

/** One broken invariant. */
export interface SystemViolation {
  invariant: Invariant;
  subject: string;
  detail: string;
  story: string;
}

/** What the checks need. */
export interface CheckInput {
  jobs: PlannedJob[];
  schedules: PlannedSchedule[];
  stored: Map<string, Job>;
  scheduleItems: Map<string, Schedule | undefined>;
  /** Bodies of the messages left in the DLQs. */
  dlqBodies: string[];
  observer: SystemObserver;
  tracker: ProbeTracker;
  faults: FaultInjector[];
  /** Driven time at the end. */
  finalNow: number;
  /** Slots at or before this driven time must have been handled. */
  slotsHandledBy: number;
  /** Largest skew of one clock from the driven clock (ms). */
  maxSkewMs: number;
  /** What became of each recurring fire the Scheduler stand-in sent, by Scheduler schedule name (`_s.<name>`). */
  fireFates?: Map<string, string[]>;
  /**
   * Limits on jobs running at once: per key (`payload.tag`), at most `limit` jobs of `types`
   * together (a concurrency limit, or a singleton scope shared by types). A key whose limit was
   * set at run time (`runtime`: every value it was set to) is bounded by the highest limit that
   * held on it: a lowered limit's bound over time is invariant 19's.
   */
  limits?: { label: string; types: readonly string[]; limit: number; runtime?: Record<string, number[]> }[];
  /** Every slot holder of the limited keys at the end, read from the slot items. */
  slotHolders?: { scope: string; key: string; jobId: string }[];
  /** Keys of slot items read at the end. */
  slotKeys?: number;
  /** Throttled and rate-limited types (key `payload.tag`). */
  paced?: readonly PacedType[];
  /**
   * How far a throttled start may be from the turn it was given (ms): `earlyMs` before it (the
   * starting worker's clock runs ahead by up to its skew), `lateMs` after it (a turn come to late,
   * the starter's skew, its claim under faults).
   */
  throttleWindow?: { earlyMs: number; lateMs: number };
  /** Debounced types (key `payload.tag`). */
  debounced?: readonly string[];
  /** The recorded step results at the end, by job id and step name (`s<i>` → `{ by }`). */
  steps?: Map<string, Map<string, unknown>>;
  /** The workflows' checks (system-workflows.ts), counted under invariants 13 to 16. */
  workflows?: WorkflowCheck;
  /** The ranked lines of a type with priorities (system-priority.ts), checked as invariant 17. */
  rankedLine?: RankedLineInput;
  /** A throttle's line (a throttled type with priorities, system-priority.ts), also invariant 17. */
  throttleLine?: RankedLineInput;
  /** The fair type's slots (system-fair.ts), checked as invariant 18. */
  fairShare?: FairShareInput;
  /** The events sent and what the API said of them (system-events.ts), checked as invariant 20. */
  events?: EventsInput;
  /** Invokes, event waits and batch items (system-compose.ts), checked as invariants 21 to 23. */
  compose?: { invokes: InvokesInput; waits: EventWaitsInput; batches: BatchItemsInput };
  /** Limits changed at run time (system-limits.ts), checked as invariant 19. */
  runtimeLimits?: RuntimeLimitInput;
  /**
   * Throttles changed at run time on a key (system-limits.ts): its turns given under a change
   * are checked against the change's pace as invariant 19, the others against the spec's as 10.
   */
  paceChanges?: readonly { type: string; key: string; changes: readonly PaceChange[] }[];
}

export interface CheckResult {
  counts: Record<Invariant, { checked: number; violated: number }>;
  violations: SystemViolation[];
  /** Acknowledged jobs and runs not terminal at the end but legitimately pending (invariant 1). */
  pendingAtEnd: number;
}

/** Runs every check. */
export function checkInvariants(input: CheckInput): CheckResult {
  const counts = Object.fromEntries(INVARIANTS.map((i) => [i, { checked: 0, violated: 0 }])) as CheckResult['counts'];
  const violations: SystemViolation[] = [];
  const planned = new Map(input.jobs.map((j) => [j.id, j]));
  const violate = (invariant: Invariant, subject: string, detail: string) => {
    counts[invariant].violated += 1;
    violations.push({ invariant, subject, detail, story: storyOf(subject, input, planned.get(subject)) });
  };
  const { observer, stored } = input;
  const acked = [...observer.acks.keys()].filter((id) => planned.has(id));
  const runIds = [...stored.values()].filter((j) => j.schedule !== undefined).map((j) => j.id);

  let pendingAtEnd = 0;
  // 1. acknowledged (and schedule runs) terminal, or due after the end of the run.
  for (const id of [...acked, ...runIds]) {
    counts[INVARIANTS[0]].checked += 1;
    const job = stored.get(id);
    if (!job) {
      violate(INVARIANTS[0], id, 'missing: the acknowledged job is gone');
      continue;
    }
    // held (its replay diverged): an operator's to move on, not lost
    if (isSettled(job.state)) continue;
    // Waiting for its parents: pending while one of them has not ended (invariant 13 says the rest)
    const parents = planned.get(id)?.dependsOn ?? [];
    if (job.state === 'waiting' && job.pendingParents !== undefined && parents.some((p) => !ended(stored.get(p.id)))) {
      pendingAtEnd += 1;
      continue;
    }
    // Legitimately pending: not yet lost by the system's own definition, i.e. the due index
    // does not yet call it overdue (not due yet, or within the grace after which the
    // supervisor repairs it: a message hidden in real time is re-sent 10 min after runAt).
    const dueAt = jobDueAt(job);
    if (dueAt !== undefined && dueAt > input.finalNow) {
      pendingAtEnd += 1;
      continue;
    }
    violate(INVARIANTS[0], id, `${job.state} at the end (runAt ${job.runAt}, attempts ${job.attempts})`);
  }

  // 2. no overlap, in real time, across series too.
  for (const trace of input.tracker.jobs.values()) counts[INVARIANTS[1]].checked += trace.executions.length;
  const overlapping = new Map<string, string>();
  for (const o of input.tracker.overlaps) {
    if (!overlapping.has(o.jobId)) {
      overlapping.set(o.jobId, `attempt ${o.attempt} started while attempt(s) ${o.runningAttempts.join(',')} ran`);
    }
  }
  for (const [id, detail] of overlapping) violate(INVARIANTS[1], id, detail);

  // 3. no start before runAt (driven clock), allowing the skew of the clocks involved.
  for (const [id, starts] of observer.starts) {
    for (const s of starts) {
      counts[INVARIANTS[2]].checked += 1;
      // runAt is written by the API (driven clock) for a series' first attempt and by a
      // worker (skewed) for a retry; the starter's own clock may run ahead by its skew.
      const tolerance = Math.max(0, s.skewMs) + (s.attempt > 1 ? input.maxSkewMs : 0) + 50;
      const early = s.runAt - s.drivenAt;
      if (early > tolerance) {
        violate(
          INVARIANTS[2],
          id,
          `attempt ${s.attempt} (series ${s.series}) started ${formatMs(early)} before its runAt ${new Date(s.runAt).toISOString()} (tolerance ${tolerance} ms)`,
        );
      }
    }
  }

  // 4 and 5, per series.
  for (const [id, starts] of observer.starts) {
    const job = stored.get(id);
    const max = job?.maxAttempts ?? planned.get(id)?.maxAttempts ?? Number.POSITIVE_INFINITY;
    const bySeries = new Map<number, number[]>();
    for (const s of starts) bySeries.set(s.series, [...(bySeries.get(s.series) ?? []), s.attempt]);
    const hooks = observer.failureHooks.get(id) ?? [];
    // a workflow's resume runs its attempt again (a wait gives the attempt back: so does an invoke's
    // or an event wait's, system-compose.ts), and its id may have been reused (a new job, with
    // attempts of its own): count its attempts, not its starts
    const workflow = job?.type === WORKFLOW_TYPE || job?.type === COMPOSE_TYPE;
    for (const [series, attempts] of bySeries) {
      counts[INVARIANTS[3]].checked += 1;
      const highest = Math.max(...attempts);
      if (highest > max || (workflow ? new Set(attempts).size : attempts.length) > max) {
        violate(
          INVARIANTS[3],
          id,
          `series ${series}: handler started ${attempts.length} times (attempts ${attempts.join(',')}), maxAttempts ${max}`,
        );
      }
      counts[INVARIANTS[4]].checked += 1;
      const calls = hooks.filter((h) => h.series === series).length;
      if (calls > 1) violate(INVARIANTS[4], id, `series ${series}: onFailure ran ${calls} times`);
    }
  }

  // 6. every slot up to the last handled one: one run or one recorded skip.
  for (const s of input.schedules) {
    const schedule = input.scheduleItems.get(s.name);
    if (!schedule) {
      counts[INVARIANTS[5]].checked += 1;
      violate(INVARIANTS[5], s.name, 'schedule item missing');
      continue;
    }
    const slots: number[] = [];
    let t = nextFireOf(schedule, Date.parse(schedule.createdAt) - 1);
    const last = schedule.lastFireAt ?? Number.NEGATIVE_INFINITY;
    while (t !== undefined && t <= Math.max(last, input.slotsHandledBy) && slots.length < 100_000) {
      slots.push(t);
      t = nextFireOf(schedule, t);
    }
    const runs = new Set([...stored.values()].filter((j) => j.schedule === s.name).map((j) => j.id));
    const slotIds = new Set(slots.map((slot) => runId(s.name, slot)));
    const handled = slots.filter((slot) => slot <= last);
    const runsInRange = handled.filter((slot) => runs.has(runId(s.name, slot))).length;
    counts[INVARIANTS[5]].checked += slots.length;
    const stray = [...runs].filter((id) => !slotIds.has(id));
    const unhandled = slots.filter((slot) => slot > last);
    const problems: string[] = [];
    if (runsInRange + schedule.skipped !== handled.length) {
      problems.push(
        `${handled.length} slots up to lastFireAt, but ${runsInRange} runs + ${schedule.skipped} skips = ${runsInRange + schedule.skipped}`,
      );
    }
    if (schedule.missed > 0) problems.push(`${schedule.missed} slots recorded as missed (neither run nor skip)`);
    if (unhandled.length > 0) {
      problems.push(
        `${unhandled.length} slots due by ${new Date(input.slotsHandledBy).toISOString()} never handled (first ${new Date(unhandled[0] ?? 0).toISOString()})`,
      );
    }
    if (stray.length > 0) problems.push(`runs off the slot grid: ${stray.slice(0, 3).join(', ')}`);
    if (problems.length > 0) {
      counts[INVARIANTS[5]].violated += Math.max(1, Math.abs(handled.length - runsInRange - schedule.skipped));
      violations.push({
        invariant: INVARIANTS[5],
        subject: s.name,
        detail: problems.join('; '),
        story: scheduleStory(s, schedule, runs, handled, input),
      });
    }
  }

  // 7. no acknowledged job's message in a DLQ (the run's own marked copies excepted).
  const inDlq = new Map<string, number>();
  for (const body of input.dlqBodies) {
    try {
      const parsed = JSON.parse(body) as { id?: string; mark?: string };
      if (parsed.id && parsed.mark === undefined) inDlq.set(parsed.id, (inDlq.get(parsed.id) ?? 0) + 1);
    } catch {
      // not a job message: not this invariant's business
    }
  }
  for (const id of acked) {
    counts[INVARIANTS[6]].checked += 1;
    const n = inDlq.get(id);
    if (n) violate(INVARIANTS[6], id, `${n} message(s) of this acknowledged job in the DLQ`);
  }
  // 8. per limit and key, in real time: executions of the limited types, killed ones ending when
  // their worker died, open ones running to the end.
  for (const { label, types, limit: specLimit, runtime } of input.limits ?? []) {
    const byKey = new Map<string, { start: number; end: number; id: string }[]>();
    for (const [id, trace] of input.tracker.jobs) {
      const job = planned.get(id);
      if (!job || !types.includes(job.type)) continue;
      const key = job.payload.tag ?? '*';
      for (const e of trace.executions) {
        byKey.set(key, [
          ...(byKey.get(key) ?? []),
          { start: e.startedAt, end: e.endedAt ?? Number.POSITIVE_INFINITY, id },
        ]);
      }
    }
    for (const [key, list] of byKey) {
      counts[INVARIANTS[7]].checked += list.length;
      const limit = Math.max(specLimit, ...(runtime?.[key] ?? []));
      const max = maxOverlap(list);
      if (max > limit) {
        // the jobs running at the first start that found more than the limit running
        const at = (e: { start: number }) => list.filter((o) => o.start <= e.start && o.end > e.start);
        const over = list.find((e) => at(e).length > limit);
        const overlapping = over ? at(over) : [];
        const running = overlapping.map((o) => o.id);
        const t = (ms: number) => (Number.isFinite(ms) ? `+${((ms - observer.t0) / 1000).toFixed(2)}s` : 'open');
        violate(
          INVARIANTS[7],
          running[0] ?? key,
          `${max} jobs of key ${key} ran at once (${label}, limit ${limit}): ${overlapping.map((o) => `${o.id} ${t(o.start)} → ${t(o.end)}`).join(', ')}`,
        );
        // the story of every job involved, not only the first
        for (const other of running.slice(1)) {
          violations.push({
            invariant: INVARIANTS[7],
            subject: other,
            detail: `ran at once with ${running[0]} (key ${key}, ${label})`,
            story: storyOf(other, input, planned.get(other)),
          });
        }
      }
    }
  }

  // 9. at the end, every slot is held by an unfinished job (one that runs, or was handed it and
  // is on its way): a finished holder is a slot nobody gives back.
  if (input.slotKeys !== undefined) {
    counts[INVARIANTS[8]].checked += input.slotKeys;
    for (const { scope, key, jobId } of input.slotHolders ?? []) {
      const job = stored.get(jobId);
      // a held job gave its slots back when its attempt ended, as a finished one did
      if (!job || isSettled(job.state)) {
        violate(INVARIANTS[8], jobId, `holds a slot of ${scope} key ${key} at the end, ${job ? job.state : 'missing'}`);
      }
    }
  }

  // 10. A rate limit's accepted jobs (their creation, on the API's clock, which counted them)
  // obey the GCRA bound exactly. A throttle's turns, as the workers were given them, obey it
  // exactly; and every throttled start (every attempt, on the driven clock) had a turn of its own
  // within the throttle window of it.
  for (const p of input.paced ?? []) {
    const byKey = new Map<string, number[]>();
    const add = (key: string, t: number) => byKey.set(key, [...(byKey.get(key) ?? []), t]);
    if (p.kind === 'throttle') {
      for (const [id, starts] of observer.starts) {
        const job = planned.get(id);
        if (job?.type !== p.type) continue;
        for (const s of starts) add(job.payload.tag ?? '*', s.drivenAt);
      }
      const scope = paceScope(p.type, 'throttle');
      for (const turnKey of observer.turns.keys()) {
        const [s, key] = turnKey.split('|');
        if (s === scope && key !== undefined && !byKey.has(key)) byKey.set(key, []);
      }
      for (const [key, starts] of byKey) {
        const turns = observer.turns.get(`${scope}|${key}`) ?? [];
        counts[INVARIANTS[9]].checked += turns.length + starts.length;
        // by the pace each turn was given under: a throttle changed at run time on the key is
        // invariant 19's (a removal, a raise, may rightly give more across it than either pace)
        const changes = input.paceChanges?.find((c) => c.type === p.type && c.key === key)?.changes ?? [];
        for (const period of pacePeriods(turns, changes)) {
          const times = period.turns.map((t) => t.at);
          const set = period.change?.throttle;
          const pace = set ? { intervalMs: throttlePace(set).intervalMs, burst: set.burst } : p;
          const invariant = set ? INVARIANTS[18] : INVARIANTS[9];
          if (set) counts[invariant].checked += times.length;
          const worst = gcraWorst(times, pace.intervalMs, pace.burst, GCRA_ROUNDING_MS);
          if (worst.excess > 0) {
            // the window's turns, for the story: when each was taken, asked and given, and by whom
            const window = period.turns
              .filter((t) => t.at >= worst.from && t.at <= worst.to)
              .map(
                (t) =>
                  `${new Date(t.at).toISOString()} by ${t.jobId ?? '?'} (asked ${new Date(t.askedAt).toISOString()}, given ${t.givenAt - t.askedAt} ms later)`,
              );
            violate(
              invariant,
              `${p.type}:${key}`,
              `throttle of ${p.type} key ${key}${set ? ` (set at run time: ${set.limit} per ${set.periodSeconds} s, burst ${set.burst})` : ''}: its turns exceed the GCRA bound (interval ${pace.intervalMs} ms, burst ${pace.burst}) by ${worst.excess.toFixed(2)}; the turns of that window: ${window.join('; ')}`,
            );
          }
        }
        const window = input.throttleWindow ?? { earlyMs: 0, lateMs: 0 };
        const unmatched = startsWithoutTurn(
          starts,
          turns.map((t) => t.at),
          window,
        );
        if (unmatched.length > 0) {
          violate(
            INVARIANTS[9],
            `${p.type}:${key}`,
            `throttle of ${p.type} key ${key}: ${unmatched.length} start(s) without a turn of their own from ${window.earlyMs} ms after to ${window.lateMs} ms before them (first at ${new Date(unmatched[0] ?? 0).toISOString()})`,
          );
        }
      }
      continue;
    }
    for (const job of stored.values()) {
      if (job.type !== p.type || job.skipReason?.kind === 'rate-limit') continue;
      add((job.payload as { tag?: string }).tag ?? '*', Date.parse(job.createdAt));
    }
    for (const [key, times] of byKey) {
      counts[INVARIANTS[9]].checked += times.length;
      const excess = gcraExcess(times, p.intervalMs, p.burst, GCRA_ROUNDING_MS);
      if (excess > 0) {
        violate(
          INVARIANTS[9],
          `${p.type}:${key}`,
          `rate limit of ${p.type} key ${key}: accepted jobs exceed the GCRA bound (interval ${p.intervalMs} ms, burst ${p.burst}) by ${excess.toFixed(2)}`,
        );
      }
    }
  }

  // 11. A skipped job never started in its last series (skipped is final, and flow control skips
  // only before an attempt). A job a debounce absorbed points, through its replacements, to a
  // job of its type and key that is not absorbed, and that ended or is not due yet.
  for (const job of stored.values()) {
    if (job.state !== 'skipped') continue;
    counts[INVARIANTS[10]].checked += 1;
    const series = job.retries ?? 0;
    const ran = (observer.starts.get(job.id) ?? []).filter((s) => s.series === series);
    if (ran.length > 0) {
      violate(
        INVARIANTS[10],
        job.id,
        `skipped (${job.skipReason?.kind ?? 'no reason'}) but started ${ran.length} time(s) in its last series`,
      );
      continue;
    }
    if (job.skipReason?.kind !== 'debounce') continue;
    const problem = debounceProblem(job, stored, input.finalNow);
    if (problem) violate(INVARIANTS[10], job.id, problem);
  }
  for (const type of input.debounced ?? []) {
    for (const job of stored.values()) {
      if (job.type === type && job.debounceKey === undefined) {
        counts[INVARIANTS[10]].checked += 1;
        violate(INVARIANTS[10], job.id, 'a job of a debounced type without its debounce key');
      }
    }
  }

  // 12. Durable steps: once the run whose result was recorded completed, the step's body never ran
  // again (a run that completed earlier may have failed to record: that one runs again, rightly);
  // the recorded result names a run that completed; every execution that got past the step got
  // that result; and a job that succeeded recorded all its steps. `input.steps` is the journal
  // series the job reads now. A job rerun from step k (its last restart, the rerun's series)
  // keeps steps before k: the rule holds for them across the rerun (they never run again). From
  // step k on, the rule holds among the runs and results from the rerun series' first start.
  for (const [jobId, runs] of input.tracker.stepRuns) {
    const plannedJob = planned.get(jobId);
    const stepCount = plannedJob?.payload.steps ?? 0;
    const recorded = input.steps?.get(jobId) ?? new Map<string, unknown>();
    const results = input.tracker.stepResults.get(jobId) ?? [];
    const rerunFrom = rerunCut(plannedJob, stored.get(jobId), observer);
    for (let step = 0; step < stepCount; step++) {
      counts[INVARIANTS[11]].checked += 1;
      const since = rerunFrom !== undefined && step >= rerunFrom.step ? rerunFrom.since : Number.NEGATIVE_INFINITY;
      const mine = runs.filter((r) => r.step === step && r.startedAt >= since);
      const value = recorded.get(`s${step}`) as { by?: string } | undefined;
      const winner = value?.by === undefined ? undefined : mine.find((r) => r.id === value.by);
      const again = winner?.endedAt === undefined ? [] : mine.filter((r) => r.startedAt > (winner.endedAt ?? 0));
      const seen = results.filter((r) => r.step === step && r.at >= since && r.by !== value?.by);
      const problem =
        again.length > 0
          ? `step s${step}: its body ran ${again.length} more time(s) after run ${winner?.id}, whose result was recorded, completed`
          : value !== undefined && (!winner || winner.endedAt === undefined)
            ? `step s${step}: the recorded result names ${value.by ?? 'nothing'}, not a run that completed`
            : seen.length > 0
              ? `step s${step}: an execution got ${seen[0]?.by}, not the recorded ${value?.by ?? '(none)'}`
              : input.stored.get(jobId)?.state === 'succeeded' && value === undefined
                ? `step s${step}: the job succeeded without it recorded`
                : undefined;
      if (problem) violate(INVARIANTS[11], jobId, problem);
    }
  }

  // 13. Dependencies: a child's first start comes after every parent ended (their finish, on a
  // clock up to the skew apart); a parent that ended other than succeeded, on an edge of policy
  // `fail` or `cancel`, ends the child that way without it ever starting; when every parent ended
  // and none ended it, the child is not left waiting for them.
  for (const job of input.jobs) {
    // every child written, acknowledged or not: a flow cut short still runs what it wrote
    if (!job.dependsOn || !stored.has(job.id)) continue;
    counts[INVARIANTS[12]].checked += 1;
    const child = stored.get(job.id);
    const parents = job.dependsOn.map((edge) => ({ edge, job: stored.get(edge.id) }));
    const starts = (observer.starts.get(job.id) ?? []).filter((s) => s.series === 0);
    const first = starts.length > 0 ? Math.min(...starts.map((s) => s.drivenAt)) : undefined;
    const endings = parents.filter(
      (p) => ended(p.job) && p.job?.state !== 'succeeded' && p.edge.onParentFailure !== 'ignore',
    );
    const allowed = new Set(endings.map((p) => policyEnd(p.edge.onParentFailure)));
    const unfinished = parents.filter((p) => !ended(p.job));
    const lastFinish = Math.max(...parents.map((p) => Date.parse(p.job?.finishedAt ?? '') || 0));
    const ending = endings[0];
    const problem =
      first !== undefined && unfinished.length > 0
        ? `started at ${new Date(first).toISOString()} while parent ${unfinished[0]?.edge.id} is ${unfinished[0]?.job?.state ?? 'missing'}`
        : first !== undefined && first + 2 * input.maxSkewMs + 50 < lastFinish
          ? `started at ${new Date(first).toISOString()}, before its last parent ended (${new Date(lastFinish).toISOString()})`
          : first !== undefined && ending
            ? `started although parent ${ending.edge.id} ended ${ending.job?.state} (policy ${ending.edge.onParentFailure})`
            : ending && child && !allowed.has(child.state) && (isTerminal(child.state) || unfinished.length === 0)
              ? `${child.state} at the end, not ${[...allowed].join(' or ')}, after parent ${ending.edge.id} ended ${ending.job?.state} (policy ${ending.edge.onParentFailure})`
              : !ending && unfinished.length === 0 && child?.state === 'waiting' && child.pendingParents !== undefined
                ? `still waits for ${child.pendingParents} parent(s), though all ended`
                : undefined;
    if (problem) violate(INVARIANTS[12], job.id, problem);
  }

  // 17. The ranked lines serve by rank (system-priority.ts).
  for (const line of [input.rankedLine, input.throttleLine]) {
    if (!line) continue;
    const ranked = checkRankedOrder(observer, line);
    counts[INVARIANTS[16]].checked += ranked.checked;
    for (const v of ranked.violations) violate(INVARIANTS[16], v.subject, v.detail);
  }

  // 18. Fair share between the tenants of a key (system-fair.ts).
  if (input.fairShare) {
    const fair = checkFairShare(observer, input.fairShare);
    counts[INVARIANTS[17]].checked += fair.checked;
    for (const v of fair.violations) {
      violate(INVARIANTS[17], v.subject, v.detail);
      // the story of the job seen waiting, and of each place counted to the hand-off bound
      for (const other of v.related) {
        violations.push({
          invariant: INVARIANTS[17],
          subject: other,
          detail: `a job the check counted (waiting, or holding a place to the hand-off bound) when ${v.subject} was given one`,
          story: storyOf(other, input, planned.get(other)),
        });
      }
    }
  }

  // 19. A limit set at run time holds from the next start (system-limits.ts).
  if (input.runtimeLimits) {
    const limits = checkRuntimeLimits(observer, input.runtimeLimits);
    counts[INVARIANTS[18]].checked += limits.checked;
    for (const v of limits.violations) violate(INVARIANTS[18], v.subject, v.detail);
  }

  // 20. Each event accepted with 2xx makes exactly one job per subscriber (system-events.ts).
  if (input.events) {
    const events = checkEvents(input.events);
    counts[INVARIANTS[19]].checked += events.checked;
    for (const v of events.violations) violate(INVARIANTS[19], v.subject, v.detail);
  }

  // 21 to 23: invokes, event waits and batch items (system-compose.ts).
  if (input.compose) {
    const checks = [
      [INVARIANTS[20], checkInvokes(input.compose.invokes)],
      [INVARIANTS[21], checkEventWaits(input.compose.waits)],
      [INVARIANTS[22], checkBatchItems(input.compose.batches)],
    ] as const;
    for (const [invariant, out] of checks) {
      counts[invariant].checked += out.checked;
      for (const v of out.violations) violate(invariant, v.subject, v.detail);
    }
  }

  // 13 to 16 for the workflows (system-workflows.ts checks them; their numbers are here).
  if (input.workflows) {
    const number: Record<WorkflowInvariant, Invariant> = {
      parents: INVARIANTS[12],
      identity: INVARIANTS[13],
      signals: INVARIANTS[14],
      resume: INVARIANTS[15],
    };
    for (const [name, n] of Object.entries(input.workflows.checked))
      counts[number[name as WorkflowInvariant]].checked += n;
    for (const v of input.workflows.violations) violate(number[v.invariant], v.subject, v.detail);
  }

  return { counts, violations, pendingAtEnd };
}

/** A job that has ended (a missing one has not: it cannot release anything). */
function ended(job: Job | undefined): boolean {
  return job !== undefined && isTerminal(job.state);
}

/** The state an edge's policy ends a child in when its parent ends other than succeeded. */
function policyEnd(policy: 'fail' | 'ignore' | 'cancel'): string {
  return policy === 'cancel' ? 'cancelled' : 'failed';
}

/**
 * Slack of the exact GCRA checks, for rounding only: a rate-limited job's creation time is the
 * very time its acceptance was counted at, and a throttle's turns are the pacer's own values.
 */
const GCRA_ROUNDING_MS = 1;

/**
 * The starts (sorted or not) that cannot each be given a turn of their own in
 * `[start − lateMs, start + earlyMs]`. Every window has the same width, so taking, start by start
 * in time order, the earliest turn still free in its window matches as many as can be matched.
 */
export function startsWithoutTurn(
  starts: readonly number[],
  turns: readonly number[],
  window: { earlyMs: number; lateMs: number },
): number[] {
  const free = [...turns].sort((a, b) => a - b);
  const unmatched: number[] = [];
  let next = 0;
  for (const start of [...starts].sort((a, b) => a - b)) {
    while (next < free.length && (free[next] as number) < start - window.lateMs) next += 1;
    if (next < free.length && (free[next] as number) <= start + window.earlyMs) next += 1;
    else unmatched.push(start);
  }
  return unmatched;
}

/** Why an absorbed job's chain of replacements does not end in a run of its key, if it does not. */
function debounceProblem(job: Job, stored: Map<string, Job>, finalNow: number): string | undefined {
  const seen = new Set<string>([job.id]);
  let current = job;
  while (current.state === 'skipped' && current.skipReason?.kind === 'debounce') {
    const by = current.skipReason.by;
    if (by === undefined) return `absorbed by debounce, but ${current.id} names no run`;
    if (seen.has(by)) return `its chain of replacements loops at ${by}`;
    seen.add(by);
    const next = stored.get(by);
    if (!next) return `absorbed into ${by}, which does not exist`;
    current = next;
  }
  if (current.type !== job.type || current.debounceKey !== job.debounceKey) {
    return `absorbed into ${current.id}, of type ${current.type} key ${current.debounceKey ?? '-'}, not ${job.type} key ${job.debounceKey ?? '-'}`;
  }
  if (current.state === 'skipped') return `absorbed into ${current.id}, skipped itself (${current.skipReason?.kind})`;
  if (isTerminal(current.state)) return undefined;
  const dueAt = jobDueAt(current);
  if (dueAt !== undefined && dueAt > finalNow) return undefined;
  return `absorbed into ${current.id}, ${current.state} at the end (runAt ${current.runAt})`;
}

/** A schedule's story: its item, its runs, the handled slots without a run, every fire's fate, and its log lines. */
function scheduleStory(
  s: PlannedSchedule,
  schedule: Schedule,
  runs: Set<string>,
  handled: number[],
  input: CheckInput,
): string {
  const { observer } = input;
  const at = (t: number) => `+${((t - observer.t0) / 1000).toFixed(2)}s`;
  const lines = [
    `  schedule: ${s.overlap} every ${s.rate}; created ${schedule.createdAt}; lastFireAt ${schedule.lastFireAt === undefined ? '-' : new Date(schedule.lastFireAt).toISOString()}; nextFireAt ${schedule.nextFireAt === undefined ? '-' : new Date(schedule.nextFireAt).toISOString()}; skipped ${schedule.skipped} (last ${schedule.lastSkippedAt === undefined ? '-' : new Date(schedule.lastSkippedAt).toISOString()}); missed ${schedule.missed}; lastRunId ${schedule.lastRunId ?? '-'}; version ${schedule.version}`,
    `  runs: ${[...runs].sort().join(' ')}`,
    `  handled slots without a run (skips, or lost): ${handled
      .filter((slot) => !runs.has(runId(s.name, slot)))
      .map((slot) => new Date(slot).toISOString())
      .join(' ')}`,
  ];
  for (const fate of input.fireFates?.get(`_s.${s.name}`) ?? []) lines.push(`  ${fate}`);
  for (const l of observer.logs.get(`schedule:${s.name}`) ?? []) {
    const fields = ['scheduledTime', 'jobId', 'reason', 'missed', 'errorName', 'fire']
      .filter((k) => l.fields[k] !== undefined)
      .map((k) => `${k}=${String(l.fields[k])}`)
      .join(' ');
    lines.push(`  log: ${at(l.t)} ${l.level} ${l.message} ${fields}`);
  }
  return lines.join('\n');
}

/**
 * Where a job's last restart was a rerun from a step (the plan's `rerunFromStep`, or the start,
 * applied: the job counts a rerun), its cut (the step's index) and the real time its series (the job's `retries`)
 * first started (never, as far as the run saw: +∞). Undefined for a job not rerun.
 */
export function rerunCut(
  plan: PlannedJob | undefined,
  job: Job | undefined,
  observer: Pick<SystemObserver, 'starts' | 'rerunsFromStart'>,
): { step: number; since: number } | undefined {
  const planned = plan?.control?.rerunFromStep;
  if (planned === undefined || !job || (job.reruns ?? 0) === 0) return undefined;
  // (a job cancelled before it recorded the planned step is rerun from the start)
  const from = observer.rerunsFromStart.has(job.id) ? 's0' : planned;
  const series = job.retries ?? 0;
  const starts = (observer.starts.get(job.id) ?? []).filter((s) => s.series === series).map((s) => s.realAt);
  return { step: Number(from.slice(1)), since: starts.length > 0 ? Math.min(...starts) : Number.POSITIVE_INFINITY };
}

function formatMs(ms: number): string {
  return ms >= 60_000 ? `${(ms / 60_000).toFixed(1)} min` : `${ms} ms`;
}

/** A job's story: plan, final item, acknowledgements and control calls, claims, starts, faults, logs. */
export function storyOf(id: string, input: CheckInput, plan: PlannedJob | undefined): string {
  const { observer } = input;
  const at = (t: number) => `+${((t - observer.t0) / 1000).toFixed(2)}s`;
  const iso = (t: number) => new Date(t).toISOString();
  const lines: string[] = [];
  if (plan) {
    lines.push(
      `  plan: ${plan.behaviour} ${JSON.stringify(plan.payload)} via ${plan.via} timing ${plan.timing}${plan.delaySeconds !== undefined ? ` ${plan.delaySeconds}s` : ''} backoff ${plan.backoffKind} ${JSON.stringify(plan.backoff)} maxAttempts ${plan.maxAttempts} duplicates ${JSON.stringify(plan.duplicates)} control ${JSON.stringify(plan.control ?? null)}`,
    );
  }
  const item = input.stored.get(id);
  lines.push(
    `  item: ${item ? `${item.state} attempts ${item.attempts}/${item.maxAttempts} retries ${item.retries ?? 0} runAt ${item.runAt} token ${item.leaseToken} errors ${JSON.stringify(item.errors.map((e) => [e.attempt, e.reason]))}` : 'missing'}`,
  );
  for (const a of observer.acks.get(id) ?? []) lines.push(`  ack: ${at(a.at)} ${a.via} ${a.status}`);
  for (const e of observer.events.get(id) ?? []) lines.push(`  event: ${e}`);
  for (const c of observer.claims.get(id) ?? []) {
    lines.push(
      `  claim: attempt ${c.attempt} series ${c.series} token ${c.token} runAt ${iso(c.runAt)} at ${iso(c.at)} by ${c.owner}`,
    );
  }
  for (const s of observer.starts.get(id) ?? []) {
    lines.push(
      `  start: ${at(s.realAt)} attempt ${s.attempt} series ${s.series} driven ${iso(s.drivenAt)} runAt ${iso(s.runAt)} skew ${s.skewMs} ms`,
    );
  }
  for (const e of input.tracker.jobs.get(id)?.executions ?? []) {
    lines.push(
      `  execution: attempt ${e.attempt} ${at(e.startedAt)} → ${e.endedAt ? at(e.endedAt) : 'open'} ${e.end ?? ''}${e.abortReason ? ` (${e.abortReason})` : ''}`,
    );
  }
  for (const h of observer.failureHooks.get(id) ?? []) lines.push(`  onFailure: ${at(h.at)} series ${h.series}`);
  for (const faults of input.faults) {
    for (const f of faults.events.filter((e) => e.jobId === id)) {
      lines.push(
        `  fault: ${at(f.at)} ${f.op} ${f.kind}/${f.phase}${f.escaping ? ' ESCAPING' : ''} sdk-attempt ${f.attempt}`,
      );
    }
  }
  for (const l of observer.logs.get(id) ?? []) {
    const fields = [
      'attempt',
      'token',
      'state',
      'previousState',
      'reason',
      'errorName',
      'delayMs',
      'runAt',
      'messageId',
    ]
      .filter((k) => l.fields[k] !== undefined)
      .map((k) => `${k}=${String(l.fields[k])}`)
      .join(' ');
    lines.push(`  log: ${at(l.t)} ${l.level} ${l.message} ${fields}`);
  }
  return lines.join('\n');
}
