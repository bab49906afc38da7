/**
 * The issue's targets, each beside the figure measured for it. The bench reports them; it never
 * fails on them.
 */

import type { BatchHandlersBench, BatchRun } from './batch-handlers';
import type { ColdStartResult } from './cold-start';
import type { CostModel } from './cost-model';
import { READ_OPS } from './counting-middleware';
import type { JournalBench } from './journal';
import { fairRatio, medianRound, type NoisyNeighbourBench, type NoisyRun } from './noisy-neighbour';
import type { OverheadResult } from './overhead';
import { BATCH_JOBS } from './path-plans';
import type { PathResult } from './paths';
import { PRICES } from './prices';
import type { PriorityBench } from './priorities';
import type { Percentiles } from './scenario';
import type { ThrottlePriorityBench } from './throttle-priorities';

export interface Goal {
  goal: string;
  target: string;
  measured: string;
  /** null: the path was not measured (not implemented yet). */
  met: boolean | null;
}

/** The round trips a bare SQS → Lambda pipeline also makes: SendMessage before, none of ours after. */
const FLOOR_BEFORE = 1;

/** Sequential AWS calls our code makes before and after the handler of an immediate job, beyond the floor's. */
export function addedRoundTrips(path: PathResult): { before: number; after: number } | undefined {
  const s = path.figures?.sequential;
  if (!s) return undefined;
  return { before: s.api + s.workerBefore - FLOOR_BEFORE, after: s.workerAfter };
}

/** Write units per job, with the table / index split. */
function unitsText(path: PathResult): string {
  const w = path.figures?.writeUnits;
  if (!w) return '';
  const indexes = Object.entries(w.indexes)
    .filter(([, units]) => units > 0)
    .map(([name, units]) => `${name} ${units}`);
  return `${w.total} (table ${w.table}${indexes.length > 0 ? ` + ${indexes.join(', ')}` : ''})`;
}

/** Write-unit targets per path (billed units per job, table + every index). */
const WRITE_UNIT_TARGETS: { id: string; goal: string; max: number }[] = [
  { id: 'immediate', goal: 'DynamoDB write units, immediate job that succeeds (payload ≤ 1 KB)', max: 4 },
  {
    id: 'event-1',
    goal: 'DynamoDB write units, an event one type subscribes to, its job succeeds (the event is not stored: as immediate)',
    max: 4,
  },
  {
    id: 'emit-1',
    goal: 'DynamoDB write units, a job that sends an event (ctx.emit) one type subscribes to, both succeed (two immediate jobs + 1: the step)',
    max: 9,
  },
  {
    id: 'event-wait',
    goal: 'DynamoDB write units, a job that waits for an event matched on a field, sent later (signal-wait + 2: the waiter and the event record)',
    max: 13,
  },
  {
    id: 'invoke-1',
    goal: 'DynamoDB write units, a job that invokes one child and returns its result, both succeed (two immediate jobs + 5 for the invoke + 3 for the wait)',
    max: 16,
  },
  { id: 'retry-once', goal: 'DynamoDB write units, fails once then succeeds', max: 7 },
  { id: 'scheduler-delayed', goal: 'DynamoDB write units, delayed beyond 15 min (Scheduler)', max: 5 },
  { id: 'cron-fire', goal: 'DynamoDB write units, cron fire', max: 6 },
  { id: 'cancel', goal: 'DynamoDB write units, cancel a scheduled job', max: 3 },
  {
    id: 'payload-1m-inline',
    goal: 'DynamoDB write units, 1 MB payload kept in the payload bucket (the item holds a reference: as immediate)',
    max: 4,
  },
  {
    id: 'payload-1m-upload',
    goal: 'DynamoDB write units, 1 MB payload uploaded and enqueued by payloadRef (as immediate)',
    max: 4,
  },
  {
    id: 'payload-10k-once',
    goal: 'DynamoDB write units, immediate job with a 10 KB payload (payload bytes written once)',
    max: 14,
  },
  {
    id: 'concurrency-free',
    goal: 'DynamoDB write units, immediate job of a type with a concurrency limit, slot free (immediate + 2)',
    max: 6,
  },
  {
    id: 'concurrency-wait',
    goal: 'DynamoDB write units, job of a concurrency limit that waits in the oldest-first line (slot free path + 5: the refused take, ticket number and item, waitingFor, admission)',
    max: 11,
  },
  {
    id: 'priority-wait',
    goal: 'DynamoDB write units, job of a type with priorities enqueued while its slot is held: it joins the ranked line at enqueue and is sent no message until admitted (slot free path + 10: the refused take, a 2-item join transaction, waitingFor, a 2-item admission transaction)',
    max: 16,
  },
  {
    id: 'fair-wait',
    goal: "DynamoDB write units, job of a limit shared fairly (fairBy) enqueued while every place is held: it joins its fair key's line at enqueue (as priority-wait: the key's count and turn ride on the same join and admission transactions)",
    max: 16,
  },
  {
    id: 'fair-free',
    goal: 'DynamoDB write units, immediate job of a limit shared fairly (fairBy), its place free: taken at enqueue, taken over by its attempt, given back (concurrency-free + 1)',
    max: 7,
  },
  {
    id: 'singleton-free',
    goal: 'DynamoDB write units, immediate job of a type with a singleton, key free (immediate + 2)',
    max: 6,
  },
  {
    id: 'throttle-free',
    goal: 'DynamoDB write units, immediate job of a throttled type, turn now (immediate + 2)',
    max: 6,
  },
  {
    id: 'throttle-line-wait',
    goal: "DynamoDB write units, job of a throttled type with priorities that waits in its key's line (immediate + 9: a 2-item join transaction, waitingFor, a 2-item transaction that takes the turn and leaves the line)",
    max: 13,
  },
  {
    id: 'rate-limit-accepted',
    goal: 'DynamoDB write units, immediate job of a rate-limited type, accepted (immediate + 2)',
    max: 6,
  },
  {
    id: 'debounce-run',
    goal: 'DynamoDB write units, debounced job that runs (immediate + 2: open and close its window)',
    max: 6,
  },
  {
    id: 'sleep-2h',
    goal: 'DynamoDB write units, job that sleeps once (immediate + 3: its wake time, the suspend, the second claim)',
    max: 7,
  },
  {
    id: 'signal-wait',
    goal: 'DynamoDB write units, job that waits for a signal sent later (immediate + 7: deadline, suspend, inbox and its due entry, wake, claim, outcome)',
    max: 11,
  },
];

const notMeasured = (goal: string, target: string, path: PathResult | undefined): Goal => ({
  goal,
  target,
  measured: path ? `not measured (${path.status}${path.note ? `: ${path.note}` : ''})` : 'not measured',
  met: null,
});

export function checkGoals(
  paths: PathResult[],
  overhead: OverheadResult,
  coldStart: ColdStartResult,
  cost: CostModel,
): Goal[] {
  const goals: Goal[] = [];
  const path = (id: string) => paths.find((p) => p.id === id);
  const immediate = path('immediate');
  const trips = immediate ? addedRoundTrips(immediate) : undefined;
  if (immediate?.figures && trips) {
    const s = immediate.figures.sequential;
    goals.push({
      goal: 'Sequential platform round trips before the handler (enqueue → handler starts)',
      target: '≤ 2',
      measured: `${trips.before} (API ${s.api} in sequence − the SendMessage any queue needs + worker claim ${s.workerBefore})`,
      met: trips.before <= 2,
    });
    goals.push({
      goal: 'Sequential platform round trips after the handler (handler returns → job recorded)',
      target: '≤ 2',
      measured: `${trips.after} (worker UpdateItem)`,
      met: trips.after <= 2,
    });
  }

  for (const t of WRITE_UNIT_TARGETS) {
    const p = path(t.id);
    const total = p?.figures?.writeUnits.total;
    if (!p || total === undefined) {
      goals.push(notMeasured(`${t.goal} (\`${t.id}\`)`, `≤ ${t.max}`, p));
      continue;
    }
    goals.push({ goal: `${t.goal} (\`${t.id}\`)`, target: `≤ ${t.max}`, measured: unitsText(p), met: total <= t.max });
  }

  goals.push(...stepGoals(path('steps-10'), immediate));
  goals.push(...edgeGoals(path('flow-edge'), path('enqueue-edge'), immediate));

  const cancel = path('cancel');
  if (cancel?.figures) {
    const reads = cancel.figures.operations.filter(
      (op) => op.actor === 'api' && op.service === 'dynamodb' && READ_OPS.has(op.operation),
    );
    const calls = reads.reduce((sum, op) => sum + op.perJob, 0);
    goals.push({
      goal: 'DynamoDB reads by the API on a cancel, before (or after) its write (`cancel`)',
      target: '0',
      measured: calls === 0 ? '0' : `${calls} (${reads.map((op) => `${op.operation} ${op.perJob}`).join(', ')})`,
      met: calls === 0,
    });
  } else {
    goals.push(notMeasured('DynamoDB reads by the API on a cancel (`cancel`)', '0', cancel));
  }

  const stacks = path('retry-5-stacks');
  const item = stacks?.statusItem;
  if (stacks?.figures && item) {
    goals.push({
      goal: 'Status item after 5 failed attempts with long stacks: table write units of each write of it (`retry-5-stacks`)',
      target: '≤ 1 each (item ≤ 1 KB)',
      measured:
        `max ${item.maxTableUnits} over ${item.writes} writes (UpdateItems: max ${item.maxUpdateTableUnits}); ` +
        `largest read back ${item.maxBytes} B; ${unitsText(stacks)} write units per job in all`,
      met: item.maxTableUnits <= 1,
    });
  } else {
    goals.push(
      notMeasured('Status item after 5 failed attempts with long stacks (`retry-5-stacks`)', '≤ 1 each', stacks),
    );
  }

  const batch = path('batch-100');
  if (batch?.figures) {
    const sends = batch.figures.operations.filter(
      (op) => op.actor === 'api' && op.service === 'sqs' && op.operation.startsWith('SendMessage'),
    );
    const perBatch = Math.round(sends.reduce((sum, op) => sum + op.perJob, 0) * BATCH_JOBS * 100) / 100;
    goals.push({
      goal: `SQS send calls for a batch enqueue of ${BATCH_JOBS} (\`batch-100\`)`,
      target: '≤ 10',
      measured: `${perBatch} (${sends.map((op) => `${op.operation} ${Math.round(op.perJob * BATCH_JOBS * 100) / 100}`).join(', ') || 'none'})`,
      met: perBatch <= 10,
    });
  } else {
    goals.push(notMeasured(`SQS send calls for a batch enqueue of ${BATCH_JOBS} (\`batch-100\`)`, '≤ 10', batch));
  }

  const immediateCost = cost.paths.find((p) => p.id === 'immediate');
  if (immediateCost) {
    goals.push({
      goal: 'Cost per million immediate jobs, quiet (1 job per worker invocation)',
      target: '≤ $4.50',
      measured: `$${immediateCost.quiet.total.toFixed(2)}`,
      met: immediateCost.quiet.total <= 4.5,
    });
    goals.push({
      goal: 'Cost per million immediate jobs, busy (10 jobs per worker invocation)',
      target: '≤ $3.50',
      measured: `$${immediateCost.busy.total.toFixed(2)}`,
      met: immediateCost.busy.total <= 3.5,
    });
  } else {
    goals.push(notMeasured('Cost per million immediate jobs, quiet / busy', '≤ $4.50 / ≤ $3.50', immediate));
  }

  goals.push({
    goal: 'Runtime CPU overhead per job (createWorker vs bare handler, in-memory ports)',
    target: '≤ 500 µs',
    measured: `${overhead.worker.overheadUs} µs (${overhead.worker.runtimeWithSdk.us} µs with the DynamoDB adapter + SDK, transport stubbed)`,
    met: overhead.worker.overheadUs <= 500,
  });
  const worker = coldStart.bundles.find((b) => b.name.startsWith('worker'));
  if (worker?.ratio !== undefined) {
    goals.push({
      goal: 'Worker bundle import time vs SDK-only bundle (same clients)',
      target: '≤ 1.2×',
      measured: `${worker.ratio}× (${worker.importMs} ms vs ${worker.baseline})`,
      met: worker.ratio <= 1.2,
    });
  }
  const grants = coldStart.grantsLoad;
  goals.push({
    goal: `Time the API's grants load adds to its cold start (fresh SSM client, first GetParameter, ${grants.documentBytes}-byte document; local stub: AWS adds its network and service latency)`,
    target: '< 100 ms',
    measured: `${grants.firstMs} ms (second call ${grants.nextMs} ms)`,
    met: grants.firstMs < 100,
  });
  return goals;
}

/** Steps in the `steps-10` path. */
const STEPS = 10;

/**
 * A durable step's cost, from the `steps-10` path against the immediate job's: its write units
 * (the issue's ≤ 1 for a result ≤ 1 KB), and its price next to Lambda durable functions' per operation.
 */
function stepGoals(steps: PathResult | undefined, immediate: PathResult | undefined): Goal[] {
  const goal = 'DynamoDB write units per durable step (`steps-10` − `immediate`, / 10; result ≤ 1 KB)';
  const price = 'Price per durable step (its write units at $0.625 per million)';
  const total = steps?.figures?.writeUnits.total;
  const base = immediate?.figures?.writeUnits.total;
  if (total === undefined || base === undefined) {
    return [
      notMeasured(goal, '≤ 1', steps),
      notMeasured(price, '< $8.00 per million (Lambda durable functions, per operation)', steps),
    ];
  }
  const perStep = (total - base) / STEPS;
  const usd = perStep * PRICES.dynamoWriteUnit * 1e6;
  return [
    { goal, target: '≤ 1', measured: `${perStep.toFixed(2)} (${total} − ${base}, / ${STEPS})`, met: perStep <= 1 },
    {
      goal: price,
      target: '< $8.00 per million (Lambda durable functions, per operation)',
      measured: `$${usd.toFixed(3)} per million steps (no read on a job's first run; a later run loads its journal with one Query per 1 MB, 1 read unit per 4 KB)`,
      met: usd < 8,
    },
  ];
}

/**
 * A dependency edge's cost: the write units of two jobs joined by one edge beyond two immediate
 * jobs', created in one flow (the parent's registry written with it) and with `dependsOn` naming a
 * parent already enqueued (registered on it); and its price next to a durable operation's.
 */
function edgeGoals(
  flow: PathResult | undefined,
  enqueued: PathResult | undefined,
  immediate: PathResult | undefined,
): Goal[] {
  const base = immediate?.figures?.writeUnits.total;
  const goals: Goal[] = [];
  for (const [p, id, max, how] of [
    [
      flow,
      'flow-edge',
      5,
      "the child's parents item, the parent's registry chunk, the release, the parent's record of it",
    ],
    [
      enqueued,
      'enqueue-edge',
      5,
      "the child's parents item, the registration (count and slot), the release, the parent's record",
    ],
  ] as const) {
    const goal = `DynamoDB write units per dependency edge (\`${id}\` − 2 × \`immediate\`: ${how})`;
    const total = p?.figures?.writeUnits.total;
    if (total === undefined || base === undefined) {
      goals.push(notMeasured(goal, `≤ ${max}`, p));
      continue;
    }
    const edge = total - 2 * base;
    goals.push({
      goal,
      target: `≤ ${max}`,
      measured: `${edge} (${total} − 2 × ${base}): $${(edge * PRICES.dynamoWriteUnit * 1e6).toFixed(3)} per million edges, vs $8.00 per million durable operations`,
      met: edge <= max,
    });
  }
  return goals;
}

/**
 * The journal's goals (issue 24, item 5): a resume of N recorded steps takes at most
 * ⌈journal bytes / 1 MB⌉ + 1 round trips; sequential steps run at ≥ 0.8× a bare loop of
 * conditional PutItems.
 */
export function journalGoals(journal: JournalBench): Goal[] {
  const goals: Goal[] = journal.resumes.map((r) => ({
    goal: `Round trips to resume a job with ${r.steps.toLocaleString('en-US')} recorded steps`,
    target: `≤ ⌈bytes / 1 MB⌉ + 1 = ${r.boundRoundTrips}`,
    measured:
      `${r.paged.roundTrips} (${r.paged.readUnits} RCU, ${Math.round(r.paged.ms)} ms); ` +
      `one GetItem per step: ${r.perStep.roundTrips} (${r.perStep.readUnits} RCU, ${Math.round(r.perStep.ms)} ms)`,
    met: r.paged.roundTrips <= r.boundRoundTrips,
  }));
  const s = journal.stepRate;
  goals.push({
    goal: `Sequential durable steps per second (${s.steps} steps), against a bare conditional-PutItem loop`,
    target: '≥ 0.8× the bare loop',
    measured: `${Math.round(s.workflowPerSecond)}/s vs ${Math.round(s.barePerSecond)}/s (${s.ratio.toFixed(2)}×)`,
    met: s.ratio >= 0.8,
  });
  return goals;
}

/** The priorities scenario: every high-priority job starts before the low-priority ones waiting with it. */
export function priorityGoal(p: PriorityBench): Goal {
  return {
    goal: `Priorities: ${p.high} high-priority jobs join a line of ${p.low.toLocaleString('en-US')} low-priority ones (limit ${p.limit}); all are handed a place before any of those`,
    target: '0 low jobs handed a place before the last high one',
    measured:
      `${p.lowAdmittedBeforeLastHigh}; started before the last high one: ${p.lowBeforeLastHigh} (their messages came first); ` +
      `wait enqueue → start: high p50 ${Math.round(p.highWaitMs.p50)} ms, p99 ` +
      `${Math.round(p.highWaitMs.p99)} ms; low p50 ${Math.round(p.lowWaitMs.p50)} ms, p99 ${Math.round(p.lowWaitMs.p99)} ms ` +
      `(the low ones waited for the high ones to join); line drained in ${p.drainSeconds.toFixed(1)} s`,
    met: p.lowAdmittedBeforeLastHigh === 0,
  };
}

/** Priorities in a throttle's line: once the high-priority jobs wait in line, every turn goes to them first. */
export function throttlePriorityGoal(p: ThrottlePriorityBench): Goal {
  const ms = (w: Percentiles) => `p50 ${Math.round(w.p50)} ms, p99 ${Math.round(w.p99)} ms`;
  return {
    goal: `Throttle priorities: ${p.high} high-priority jobs join a throttle's line (${p.perSecond} starts a second) of ${p.low} low-priority ones; every turn taken once they wait goes to them first`,
    target: '0 low jobs started after the last high one joined and before the last high one started',
    measured:
      `${p.lowBetween} (of ${p.lowWaitingThen} low jobs still waiting then); wait enqueue → start: high ${ms(p.highWaitMs)}; ` +
      `low ${ms(p.lowWaitMs)}; the line drained at ${p.startsPerSecond.toFixed(1)} starts a second (one message's latency per turn)`,
    met: p.lowBetween === 0,
  };
}

/** A run's quiet-tenant waits, in a goal's words. */
const quietText = (r: NoisyRun) => `p50 ${Math.round(r.quiet.p50)} ms, p99 ${Math.round(r.quiet.p99)} ms`;

/**
 * The noisy neighbour: with fair share, the quiet tenants' p99 wait is at most twice their p99
 * alone; today's oldest-first line is the baseline beside it.
 */
export function fairShareGoal(n: NoisyNeighbourBench): Goal {
  const { oldestFirst } = n;
  // the median round's (one round's p99 of 80 waits is nearly their maximum: it swings)
  const { alone, fair } = medianRound(n.rounds);
  const ratio = (r: NoisyRun) => `${(r.quiet.p99 / alone.quiet.p99).toFixed(1)}×`;
  const each = n.rounds.map((r) => `${fairRatio(r).toFixed(2)}×`).join(', ');
  const tenants = `${n.quietTenants} quiet tenants' ${n.quietEach} jobs each`;
  return {
    goal:
      `Fair share, noisy neighbour (limit ${n.limit}, jobs of ${n.jobMs} ms): ${tenants} enqueued in the middle of one ` +
      `tenant's ${n.noisy.toLocaleString('en-US')}; their wait enqueue → start with fairBy, against alone`,
    target: 'p99 with fair share ≤ 2× p99 alone (the median of the rounds)',
    measured:
      `${n.rounds.length === 1 ? '1 round' : `median of ${n.rounds.length} rounds (${each})`}: ` +
      `fair share ${quietText(fair)} (${ratio(fair)}); alone ${quietText(alone)}; ` +
      `oldest-first (baseline) ${quietText(oldestFirst)} (${ratio(oldestFirst)}). Of the fair-share wait, ` +
      `p50 ${Math.round(fair.quietInQueue.p50)} ms / p99 ${Math.round(fair.quietInQueue.p99)} ms passed before ` +
      'the job was placed (in line, or started)',
    met: fair.quiet.p99 <= 2 * alone.quiet.p99,
  };
}

/**
 * Batch handlers against single jobs: a batch type's handler is called at most once per
 * `maxSize` jobs and a half (a window may close on a part-full batch), and each job costs Orrery
 * no more write units than a single job does.
 */
export function batchHandlersGoal(b: BatchHandlersBench): Goal {
  const perJob = (r: BatchRun) => (r.writeUnits / 1000).toFixed(2);
  return {
    goal:
      `Batch handlers (maxSize ${b.maxSize}) against single jobs, ${b.batch.jobs.toLocaleString('en-US')} jobs each on local AWS: ` +
      'handler calls per 1,000 jobs, and write units per job',
    target: `≤ ${Math.round((1000 / b.maxSize) * 1.5)} handler calls per 1,000 jobs; write units per job ≤ a single job's`,
    measured:
      `batch: ${b.batch.handlerCalls} calls, ${perJob(b.batch)} WU and ${(b.batch.requests / 1000).toFixed(2)} requests per job, ${b.batch.seconds.toFixed(1)} s; ` +
      `single: ${b.single.handlerCalls} calls, ${perJob(b.single)} WU and ${(b.single.requests / 1000).toFixed(2)} requests per job, ${b.single.seconds.toFixed(1)} s`,
    met: b.batch.handlerCalls <= (1000 / b.maxSize) * 1.5 && b.batch.writeUnits <= b.single.writeUnits,
  };
}
