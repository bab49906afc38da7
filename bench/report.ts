/**
 * Renders the bench's results as markdown tables (the same tables README.md quotes).
 */
import type { ColdStartResult } from './cold-start';
import type { CostBreakdown, CostModel } from './cost-model';
import { addedRoundTrips, type Goal } from './goals';
import type { OverheadResult } from './overhead';
import type { PathResult } from './paths';
import { ASSUMPTIONS, PRICE_SOURCE } from './prices';
import type { ThroughputRun } from './throughput';

export interface BenchResults {
  meta: { date: string; mode: 'quick' | 'full'; node: string; cpu: string; cores: number; seconds: number };
  goals: Goal[];
  paths: PathResult[];
  cost: CostModel;
  overhead: OverheadResult;
  coldStart: ColdStartResult;
  throughput: ThroughputRun[];
}

function table(headers: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.map((c) => String(c).replace(/\|/g, '\\|')).join(' | ')} |`;
  return [line(headers), line(headers.map(() => '---')), ...rows.map(line)].join('\n');
}

const usd = (n: number) => `$${n.toFixed(2)}`;
const kb = (bytes: number | undefined) => (bytes === undefined ? '' : `${(bytes / 1024).toFixed(0)} KB`);

function goalsTable(goals: Goal[]): string {
  return table(
    ['goal', 'target', 'measured', ''],
    goals.map((g) => [g.goal, g.target, g.measured, g.met ? 'met' : '**not met**']),
  );
}

function requestsTable(paths: PathResult[]): string {
  const measured = paths.filter((p) => p.figures);
  const keys = new Map<string, string>();
  for (const p of measured) {
    for (const op of p.figures?.operations ?? []) keys.set(`${op.actor}|${op.service}|${op.operation}`, op.actor);
  }
  const actorOrder = ['api', 'worker', 'esm'];
  const sorted = [...keys.keys()].sort(
    (a, b) =>
      actorOrder.indexOf(a.split('|')[0] ?? '') - actorOrder.indexOf(b.split('|')[0] ?? '') || a.localeCompare(b),
  );
  const who: Record<string, string> = { api: 'API Lambda', worker: 'worker Lambda', esm: 'event source mapping' };
  const rows: (string | number)[][] = sorted.map((key) => {
    const [actor = '', service = '', operation = ''] = key.split('|');
    return [
      who[actor] ?? actor,
      `${service} ${operation}`,
      ...measured.map((p) => {
        const op = p.figures?.operations.find((o) => `${o.actor}|${o.service}|${o.operation}` === key);
        if (!op) return '–';
        return op.attemptsPerJob === op.perJob ? op.perJob : `${op.perJob} (${op.attemptsPerJob} HTTP)`;
      }),
    ];
  });
  const units = (pick: (p: PathResult) => number | string) => measured.map(pick);
  rows.push([
    'EventBridge Scheduler',
    'invocation → sqs SendMessage',
    ...units((p) => p.figures?.schedulerInvocations ?? 0),
  ]);
  rows.push(['DynamoDB', 'write units, total billed', ...units((p) => `**${p.figures?.writeUnits.total}**`)]);
  rows.push(['DynamoDB', '… of which table', ...units((p) => p.figures?.writeUnits.table ?? 0)]);
  for (const index of ['byType', 'byTypeState']) {
    rows.push(['DynamoDB', `… of which GSI ${index}`, ...units((p) => p.figures?.writeUnits.indexes[index] ?? 0)]);
  }
  rows.push(['DynamoDB', 'read units', ...units((p) => p.figures?.readUnits.total ?? 0)]);
  rows.push([
    'Lambda',
    'invocations (API + worker)',
    ...units((p) => `${p.figures?.lambdaInvocations.api} + ${p.figures?.lambdaInvocations.worker}`),
  ]);
  const main = table(['who', 'service / operation', ...measured.map((p) => p.label)], rows);
  const missing = paths.filter((p) => !p.figures);
  const rest = table(
    ['path', 'status', 'detail'],
    missing.map((p) => [p.label, p.status, p.note ?? '']),
  );
  return `${main}\n\n${rest}`;
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
  for (const peer of cost.peers) {
    const range = peer.low === peer.high ? usd(peer.low) : `${usd(peer.low)}–${usd(peer.high)}`;
    rows.push([`${peer.name} (${peer.note})`, '', '', '', '', range, range]);
  }
  return table(
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
  );
}

function durationNote(cost: CostModel): string {
  const immediate = cost.paths.find((p) => p.id === 'immediate');
  const d = immediate?.durationsMs;
  return d
    ? `Modelled Lambda durations (immediate job): API ${d.api} ms, worker ${d.workerQuiet} ms per 1-job invocation, ` +
        `${d.workerBusy} ms per 10-job invocation.`
    : '';
}

function roundTripTable(paths: PathResult[]): string {
  const rows = paths
    .filter((p) => p.figures)
    .map((p) => {
      const s = p.figures?.sequential;
      const added = addedRoundTrips(p);
      return [
        p.label,
        s?.api ?? '',
        s?.esmBefore ?? '',
        s?.workerBefore ?? '',
        s?.workerAfter ?? '',
        s?.workerAfterFailure || '–',
        s?.esmAfter ?? '',
        added?.before ?? '',
        added?.after ?? '',
      ];
    });
  return table(
    [
      'path',
      'API (in sequence)',
      'ESM receive',
      'worker before handler',
      'worker after handler',
      'worker after a failed attempt',
      'ESM delete',
      'added before',
      'added after',
    ],
    rows,
  );
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

export function renderReport(r: BenchResults): string {
  const m = r.meta;
  return [
    `# Orrery bench (${m.mode}) — ${m.date}`,
    `Node ${m.node}, ${m.cores} × ${m.cpu}; took ${m.seconds.toFixed(1)} s. Local AWS: DynamoDB Local, fauxqs, Scheduler stand-in.`,
    '## Goals',
    goalsTable(r.goals),
    `## AWS requests per job (${r.paths.find((p) => p.figures)?.figures?.jobs ?? 0} jobs per path, one at a time)`,
    requestsTable(r.paths),
    '## Cost per million jobs',
    `${PRICE_SOURCE}. Lambda ${ASSUMPTIONS.apiMemoryMb} MB API / ${ASSUMPTIONS.workerMemoryMb} MB worker; assumed call latencies ${JSON.stringify(ASSUMPTIONS.latencyMs)} ms; Function URL requests are free. ${durationNote(r.cost)}`,
    costTable(r.cost),
    '## Sequential AWS round trips per job',
    roundTripTable(r.paths),
    `## Runtime CPU (${r.overhead.jobsPerRound} jobs × ${r.overhead.rounds} rounds, median)`,
    overheadTable(r.overhead),
    `## Cold start (${r.coldStart.runs} fresh ${r.coldStart.node} processes per bundle; empty process ${r.coldStart.emptyProcessMs} ms)`,
    coldStartTable(r.coldStart),
    '## Throughput on local AWS (our code + emulators on this machine)',
    throughputTable(r.throughput),
  ].join('\n\n');
}
