/**
 * Renders the bench's results as markdown tables (the same tables docs/cost.md quotes).
 */

import type { BatchHandlersBench } from './batch-handlers';
import type { ColdStartResult } from './cold-start';
import type { CostBreakdown, CostModel, Range } from './cost-model';
import type { Goal } from './goals';
import type { JournalBench } from './journal';
import { kb, table, usd } from './markdown';
import type { NoisyNeighbourBench } from './noisy-neighbour';
import type { OverheadResult } from './overhead';
import type { PathResult } from './paths';
import type { MeasuredPeer } from './peers';
import { ASSUMPTIONS, PRICE_SOURCE } from './prices';
import type { PriorityBench } from './priorities';
import { requestsTable, roundTripTable } from './report-paths';
import type { ThrottlePriorityBench } from './throttle-priorities';
import type { ThroughputRun } from './throughput';

export interface BenchResults {
  meta: {
    date: string;
    mode: 'quick' | 'full';
    node: string;
    cpu: string;
    cores: number;
    seconds: number;
    /** 1-minute load average at start and end: other work on the machine skews every timing. */
    loadAverage: number[];
  };
  goals: Goal[];
  paths: PathResult[];
  /** Peers measured in this run (their figures; their costs are in `cost.peers`). */
  peers: MeasuredPeer[];
  cost: CostModel;
  overhead: OverheadResult;
  coldStart: ColdStartResult;
  throughput: ThroughputRun[];
  /** The journal: resume reads and sequential steps (bench/journal.ts). */
  journal?: JournalBench;
  /** Priorities: a line of low-priority jobs, then high-priority ones (bench/priorities.ts). */
  priorities?: PriorityBench;
  /** Priorities in a throttle's line: low-priority jobs in line, then high-priority ones (bench/throttle-priorities.ts). */
  throttlePriorities?: ThrottlePriorityBench;
  /** Fair share: a noisy tenant and four quiet ones (bench/noisy-neighbour.ts). */
  noisyNeighbour?: NoisyNeighbourBench;
  /** Batch handlers against single jobs (bench/batch-handlers.ts). */
  batchHandlers?: BatchHandlersBench;
}

function goalsTable(goals: Goal[]): string {
  return table(
    ['goal', 'target', 'measured', ''],
    goals.map((g) => [g.goal, g.target, g.measured, g.met === null ? 'not measured' : g.met ? 'met' : '**not met**']),
  );
}

function costTable(cost: CostModel): string {
  const cells = (b: CostBreakdown) => [usd(b.sqs), usd(b.dynamodb), usd(b.lambda), usd(b.scheduler)];
  const rows: (string | number)[][] = cost.paths.map((p) => [
    p.label,
    ...cells(p.quiet),
    `**${usd(p.quiet.total)}**`,
    `**${usd(p.busy.total)}**`,
  ]);
  rows.push([
    'Floor: bare SQS → Lambda (no status, no lease)',
    ...cells(cost.floor.quiet),
    usd(cost.floor.quiet.total),
    usd(cost.floor.busy.total),
  ]);
  const fixed = cost.fixed.supervisorPerMonth;
  const note =
    fixed === null
      ? ''
      : `\n\nFixed, per deployment: the supervisor's ${Math.round(cost.fixed.supervisorPassesPerMonth)} idle passes a month ` +
        `cost ${usd(fixed)}; the event source mappings' empty long polls are not measured.`;
  return `${table(
    [
      'path (USD per million jobs)',
      'SQS',
      'DynamoDB',
      'Lambda',
      'Scheduler',
      'total, quiet (1 job/batch)',
      'total, busy (10 jobs/batch)',
    ],
    rows,
  )}${note}`;
}

const range = (r: Range) => (r.low === r.high ? usd(r.low) : `${usd(r.low)}–${usd(r.high)}`);

function peersTable(cost: CostModel): string {
  const pair = (v: { quiet: number; busy: number } | undefined) =>
    v === undefined ? '–' : v.quiet === v.busy ? String(v.quiet) : `${v.quiet} / ${v.busy}`;
  const rows = cost.peers.map((p) => [
    p.basis === 'ours' ? `**${p.name}**` : p.name,
    p.writeUnits === undefined ? '–' : String(p.writeUnits),
    pair(p.sqsRequests),
    pair(p.lambdaInvocations),
    p.units ?? '',
    p.basis === 'ours' ? `**${range(p.quiet)}**` : range(p.quiet),
    p.basis === 'ours' ? `**${range(p.busy)}**` : range(p.busy),
    p.note,
  ]);
  const sources = cost.peers
    .filter((p) => p.source)
    .map((p) => `${p.name}: ${p.source}.`)
    .join(' ');
  return `${table(
    [
      'per job (USD per million jobs)',
      'DynamoDB write units',
      'SQS requests, quiet / busy',
      'Lambda invocations, quiet / busy',
      "peer's own billed units",
      'total, quiet',
      'total, busy',
      'note',
    ],
    rows,
  )}\n\nMeasured rows ran in this bench, on the same local AWS with the same counting middleware, and are priced by the same model as our paths. List-priced rows add their handler as one ${ASSUMPTIONS.workerMemoryMb} MB Lambda invocation of the bare handler. Sources: ${sources}`;
}

function durationNote(cost: CostModel): string {
  const immediate = cost.paths.find((p) => p.id === 'immediate');
  const d = immediate?.durationsMs;
  return d
    ? `Modelled Lambda durations (immediate job): API ${d.api} ms, worker ${d.workerQuiet} ms per 1-job invocation, ` +
        `${d.workerBusy} ms per 10-job invocation.`
    : '';
}

function overheadTable(o: OverheadResult): string {
  const w = o.worker;
  return table(
    ['what', 'CPU per job', 'log output per job'],
    [
      ['bare no-op handler over the same SQS events', `${w.bare.us} µs`, ''],
      [
        'createWorker, in-memory ports, log level info (default)',
        `${w.runtimeInfo.us} µs`,
        `${w.runtimeInfo.logBytes} B`,
      ],
      ['createWorker, in-memory ports, log level warn', `${w.runtimeWarn.us} µs`, `${w.runtimeWarn.logBytes} B`],
      [
        'createWorker + DynamoDB adapter + SDK v3 (transport stubbed), info',
        `${w.runtimeWithSdk.us} µs`,
        `${w.runtimeWithSdk.logBytes} B`,
      ],
      ['**runtime overhead** (info − bare)', `**${w.overheadUs} µs** (${w.ratio}×)`, ''],
      ['API: bare parse-and-answer handler, per request', `${o.api.bare.us} µs`, ''],
      ['API: createApiHandler, in-memory ports, per request', `${o.api.handler.us} µs`, ''],
      ['API: createApiHandler + adapters + SDK (stubbed), per request', `${o.api.handlerWithSdk.us} µs`, ''],
    ],
  );
}

function coldStartTable(c: ColdStartResult): string {
  const rows = [...c.bundles, ...c.baselines].map((b) =>
    b.status !== 'measured'
      ? [b.name, b.status, '', '', '', '', '']
      : [
          b.name,
          kb(b.bytes),
          kb(b.gzipBytes),
          (b.sdkClients ?? []).join(', '),
          `${b.importMs} ms`,
          `${b.processMs} ms`,
          b.ratio ? `${b.ratio}×` : '',
        ],
  );
  return table(
    ['bundle', 'minified', 'gzip', 'SDK clients inside', 'import (median)', 'whole process', 'vs SDK-only'],
    rows,
  );
}

/** One line: the API's grants load at cold start, and what it was measured against. */
function grantsLoadLine(c: ColdStartResult): string {
  const g = c.grantsLoad;
  return (
    `API grants load at cold start (a fresh SSM client's first GetParameter, a ${g.documentBytes}-byte grants ` +
    `document parsed and checked; median of ${c.runs} fresh processes): **${g.firstMs} ms** (a second call with the same ` +
    `client: ${g.nextMs} ms). Measured against ${g.target}; on AWS the network and SSM's own latency come on top.`
  );
}

function journalTable(journal: JournalBench | undefined): string {
  if (!journal) return '';
  return table(
    [
      'resume of',
      'journal bytes',
      'bound',
      'paged Query: round trips',
      'RCU',
      'ms',
      'GetItem per step: round trips',
      'RCU',
      'ms',
    ],
    journal.resumes.map((r) => [
      `${r.steps} steps`,
      r.journalBytes,
      r.boundRoundTrips,
      r.paged.roundTrips,
      r.paged.readUnits,
      Math.round(r.paged.ms),
      r.perStep.roundTrips,
      r.perStep.readUnits,
      Math.round(r.perStep.ms),
    ]),
  );
}

function noisyNeighbourTable(n: NoisyNeighbourBench | undefined): string {
  if (!n) return '';
  const ms = (v: number | undefined) => (v === undefined ? '–' : Math.round(v));
  // each round's fair share against its own alone; the first round's beside the baseline
  const runs = [
    { r: n.alone, alone: n.alone, label: n.alone.row },
    { r: n.oldestFirst, alone: n.alone, label: n.oldestFirst.row },
    ...n.rounds.flatMap((round, i) => {
      const suffix = n.rounds.length > 1 ? ` (round ${i + 1})` : '';
      return [
        ...(i === 0 ? [] : [{ r: round.alone, alone: round.alone, label: `${round.alone.row}${suffix}` }]),
        { r: round.fair, alone: round.alone, label: `${round.fair.row}${suffix}` },
      ];
    }),
  ];
  const rows = runs.map(({ r, alone, label }) => [
    label,
    r.type,
    ms(r.quiet.p50),
    ms(r.quiet.p99),
    `${(r.quiet.p99 / alone.quiet.p99).toFixed(1)}×`,
    `${ms(r.quietInQueue.p50)} / ${ms(r.quietInQueue.p99)}`,
    `${ms(r.noisy?.p50)} / ${ms(r.noisy?.p99)}`,
    r.transactions
      ? `${r.transactions.refused.toLocaleString('en-US')} of ${r.transactions.sent.toLocaleString('en-US')}`
      : '–',
    r.seconds.toFixed(1),
  ]);
  return table(
    [
      'run',
      'type',
      'quiet p50 (ms)',
      'quiet p99 (ms)',
      'p99 vs alone',
      'quiet, until placed: p50 / p99 (ms)',
      'noisy p50 / p99 (ms)',
      'transactions refused',
      'seconds',
    ],
    rows,
  );
}

function throughputTable(runs: ThroughputRun[]): string {
  return table(
    [
      'pollers (1 batch of ≤ 10 each)',
      'jobs',
      'seconds',
      'jobs/s',
      'worker invocations',
      'CPU cores: bench process / DynamoDB Local',
    ],
    runs.map((r) => [
      r.concurrency,
      r.jobs,
      r.seconds.toFixed(2),
      Math.round(r.jobsPerSecond),
      r.invocations,
      `${r.cores.node.toFixed(2)} / ${r.cores.dynamodbLocal === null ? 'n/a' : r.cores.dynamodbLocal.toFixed(2)}`,
    ]),
  );
}

function batchNote(paths: PathResult[]): string {
  const f = paths.find((p) => p.id === 'batch-100')?.figures;
  if (!f) return '';
  return (
    `A batch of ${Math.round(1 / Math.max(0.01, f.lambdaInvocations.api))} jobs: ${f.apiCallsPerRequest} AWS calls in ` +
    `${f.apiDepth} sequential steps inside one API request.`
  );
}

export function renderReport(r: BenchResults): string {
  const m = r.meta;
  return [
    `# Orrery bench (${m.mode}) — ${m.date}`,
    `Node ${m.node}, ${m.cores} × ${m.cpu}, load average ${m.loadAverage.join(' → ')}; took ${m.seconds.toFixed(1)} s. ` +
      'Local AWS: DynamoDB Local, fauxqs, Scheduler stand-in.',
    '## Goals',
    goalsTable(r.goals),
    `## AWS requests per job (${r.paths.find((p) => p.figures)?.figures?.jobs ?? 0} jobs per path, one trace at a time)`,
    'Counted once per logical call; "(n HTTP)" when SDK retries made more attempts. Batch and supervisor columns are ' +
      'per job of a batch of 100 and per pass.',
    requestsTable(r.paths),
    '## Cost per million jobs',
    `${PRICE_SOURCE}. Lambda ${ASSUMPTIONS.apiMemoryMb} MB API / ${ASSUMPTIONS.workerMemoryMb} MB worker; assumed call latencies ${JSON.stringify(ASSUMPTIONS.latencyMs)} ms; Function URL requests are free. ${durationNote(r.cost)}`,
    costTable(r.cost),
    '## Peers: cost per million jobs',
    peersTable(r.cost),
    '## Sequential AWS round trips per job',
    roundTripTable(r.paths),
    batchNote(r.paths),
    `## Runtime CPU (${r.overhead.jobsPerRound} jobs × ${r.overhead.rounds} rounds, median)`,
    overheadTable(r.overhead),
    `## Cold start (${r.coldStart.runs} fresh ${r.coldStart.node} processes per bundle; empty process ${r.coldStart.emptyProcessMs} ms)`,
    coldStartTable(r.coldStart),
    grantsLoadLine(r.coldStart),
    '## Throughput on local AWS (our code + emulators on this machine)',
    throughputTable(r.throughput),
    '## Workflow journal on local AWS (resume reads, before and after, in the same run)',
    'A resumed run loads its journal with one paged Query (1 MB pages); the earlier data model read one ' +
      'strongly consistent GetItem per recorded step, in order (rebuilt here over the same items).',
    journalTable(r.journal),
    r.journal
      ? `Sequential steps: ${Math.round(r.journal.stepRate.workflowPerSecond)}/s through ctx.step, ` +
        `${Math.round(r.journal.stepRate.barePerSecond)}/s for a bare conditional-PutItem loop ` +
        `(${r.journal.stepRate.ratio.toFixed(2)}×).`
      : '',
    '## Fair share on local AWS: a noisy neighbour',
    r.noisyNeighbour
      ? `Limit ${r.noisyNeighbour.limit}, jobs of ${r.noisyNeighbour.jobMs} ms; ${r.noisyNeighbour.quietTenants} quiet tenants enqueue ` +
        `${r.noisyNeighbour.quietEach} jobs each once the noisy one has enqueued half of its ` +
        `${r.noisyNeighbour.noisy.toLocaleString('en-US')}. Wait: enqueue (the batch request sent) → start (the handler called). ` +
        '"Until placed": until the job was in line (at enqueue, or on its first delivery) or started. ' +
        '"Transactions refused": joins and admissions DynamoDB refused (another writer of the slot item ' +
        "moved first), each read and sent again. A slot's admissions, and its joins at enqueue, take turns " +
        'within a process: here all the workers of a type share one, and the API another; on AWS, each ' +
        'Lambda instance is one. ' +
        `Rounds: ${r.noisyNeighbour.rounds.length} of alone then fair share, each fair share against its own round's alone; ` +
        "the goal takes the median round's ratio (a p99 of the quiet tenants' waits is nearly their maximum, and one round's swings with the machine)."
      : '',
    noisyNeighbourTable(r.noisyNeighbour),
    '## Batch handlers on local AWS: against single jobs',
    r.batchHandlers
      ? `${r.batchHandlers.batch.jobs.toLocaleString('en-US')} jobs of a type with a batch handler ` +
        `(maxSize ${r.batchHandlers.maxSize}, a window of 1 s), then as many of a plain type, each enqueued in ` +
        'batches of 100 and received 10 messages at a time. Per 1,000 jobs. Each job keeps its own claim, lease, ' +
        "status and result, so its requests and write units are a single job's; the handler calls are what " +
        "the batch saves (the handler's own work: one bulk call for up to maxSize jobs). Inngest batches " +
        'up to 100 events (500 on paid plans); an SQS event source mapping up to 10,000 messages.'
      : '',
    batchHandlersTable(r.batchHandlers),
  ].join('\n\n');
}

function batchHandlersTable(b: BatchHandlersBench | undefined): string {
  if (!b) return '';
  const row = (r: BatchHandlersBench['batch']) =>
    `| ${r.row} | ${r.handlerCalls} | ${r.requests} | ${r.writeUnits} | ${r.seconds.toFixed(1)} |`;
  return [
    '| run | handler calls | AWS requests | write units | seconds |',
    '| --- | --- | --- | --- | --- |',
    row(b.batch),
    row(b.single),
  ].join('\n');
}
