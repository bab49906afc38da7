/**
 * Cost per million jobs at list prices, from the measured request counts, write units and CPU
 * times, plus the stated assumptions in prices.ts (latencies, memory, batch fill).
 */
import type { OverheadResult } from './overhead';
import type { OperationCount } from './path-analysis';
import type { PathResult } from './paths';
import type { MeasuredPeer } from './peers';
import { ASSUMPTIONS, lambdaInvocationCost, PEERS, PRICES } from './prices';

/** USD per million jobs. */
export interface CostBreakdown {
  sqs: number;
  dynamodb: number;
  lambda: number;
  scheduler: number;
  /** Payload bucket requests (offloaded values: S3 PUT and GET); absent when a path makes none. */
  s3?: number;
  total: number;
}

export interface PathCost {
  id: string;
  label: string;
  /** Billed units per job. */
  units: {
    sqsPlatform: number;
    sqsByScheduler: number;
    sqsEsmQuiet: number;
    sqsEsmBusy: number;
    dynamoWriteUnits: number;
    dynamoReadUnits: number;
    schedulerInvocations: number;
    /** As measured, and worker invocations per job at the quiet and busy batch fills. */
    lambdaInvocations: { api: number; worker: number; supervisor: number; workerQuiet: number; workerBusy: number };
  };
  /** Modelled Lambda durations (ms): one API call, one worker invocation (quiet: 1 job, busy: 10), one supervisor pass. */
  durationsMs: { api: number; workerQuiet: number; workerBusy: number; supervisor: number };
  quiet: CostBreakdown;
  busy: CostBreakdown;
}

/** USD per million jobs, as a range when the units per job are. */
export interface Range {
  low: number;
  high: number;
}

/** One row of the peers table: ours, the floor, the hand-built pipeline (measured) and list-priced peers. */
export interface PeerCost {
  id: string;
  name: string;
  basis: 'ours' | 'measured' | 'modelled';
  /** Per job; undefined where the peer has no such meter. */
  writeUnits?: number;
  sqsRequests?: { quiet: number; busy: number };
  lambdaInvocations?: { quiet: number; busy: number };
  /** The peer's own billed units per job, in words (list-priced peers). */
  units?: string;
  quiet: Range;
  busy: Range;
  note: string;
  source?: string;
}

export interface CostModel {
  paths: PathCost[];
  /** Costs per deployment that do not grow with jobs. */
  fixed: { supervisorPassesPerMonth: number; supervisorPerMonth: number | null };
  floor: { quiet: CostBreakdown; busy: CostBreakdown; note: string };
  peers: PeerCost[];
}

const M = 1e6;
const round = (n: number, digits = 3) => Math.round(n * 10 ** digits) / 10 ** digits;

function breakdown(parts: Omit<CostBreakdown, 'total'>): CostBreakdown {
  const s3 = parts.s3 ?? 0;
  const perMillion = {
    sqs: round(parts.sqs * M),
    dynamodb: round(parts.dynamodb * M),
    lambda: round(parts.lambda * M),
    scheduler: round(parts.scheduler * M),
    ...(s3 > 0 ? { s3: round(s3 * M) } : {}),
  };
  return {
    ...perMillion,
    total: round(parts.sqs * M + parts.dynamodb * M + parts.lambda * M + parts.scheduler * M + s3 * M),
  };
}

const sum = (ops: OperationCount[], pick: (op: OperationCount) => boolean) =>
  ops.filter(pick).reduce((total, op) => total + op.perJob, 0);

/** ms of waiting on AWS for these operations, done one after another. */
const latency = (ops: OperationCount[]) =>
  ops.reduce((total, op) => total + op.perJob * (ASSUMPTIONS.latencyMs[op.service] ?? 10), 0);

const cpuStretch = (memoryMb: number) => ASSUMPTIONS.fullVcpuMemoryMb / memoryMb;

/**
 * `workerCpuUs`: CPU of the worker per job before the stretch to the function's memory; by default
 * ours, measured with the DynamoDB adapter and the SDK (transport stubbed).
 */
function pathCost(
  path: Pick<PathResult, 'id' | 'label' | 'figures'>,
  overhead: OverheadResult,
  workerCpuUs = overhead.worker.runtimeWithSdk.us,
): PathCost | undefined {
  const f = path.figures;
  if (!f) return undefined;
  const ops = f.operations;
  const inv = f.lambdaInvocations;
  const byActor = (actor: string) => ops.filter((op) => op.actor === actor);
  // Records handled per job (1, or 2 when a delivery was retried or hidden until runAt), and what
  // the event source mapping spends per invocation; both independent of how full batches were.
  const deliveries = inv.worker * (f.batchFill || 1);
  const esmPerInvocation = inv.worker > 0 ? sum(ops, (op) => op.actor === 'esm') / inv.worker : 0;
  const sqsPlatform = sum(ops, (op) => op.service === 'sqs' && op.actor !== 'esm');
  const sqsByScheduler = f.schedulerInvocations; // each fire is one SendMessage, billed to the account
  const quietFill = ASSUMPTIONS.batchFillQuiet;
  const busyFill = ASSUMPTIONS.batchFillBusy;

  // API: calls of one request may overlap (a batch); scale their waits by depth / calls.
  const apiCalls = byActor('api');
  const overlap = f.apiCallsPerRequest > 0 ? Math.min(1, f.apiDepth / f.apiCallsPerRequest) : 1;
  const jobsPerRequest = inv.api > 0 ? 1 / inv.api : 0;
  const apiCpuMs = (overhead.api.handlerWithSdk.us / 1000) * cpuStretch(ASSUMPTIONS.apiMemoryMb) * jobsPerRequest;
  const apiMs = inv.api > 0 ? (latency(apiCalls) / inv.api) * overlap + apiCpuMs : 0;
  const apiLambda = inv.api * lambdaInvocationCost(ASSUMPTIONS.apiMemoryMb, apiMs);
  const supervisorMs = inv.supervisor > 0 ? latency(byActor('supervisor')) / inv.supervisor : 0;
  const supervisorLambda = inv.supervisor * lambdaInvocationCost(ASSUMPTIONS.workerMemoryMb, supervisorMs);

  const workerCpuMs = (workerCpuUs / 1000) * cpuStretch(ASSUMPTIONS.workerMemoryMb);
  const waitPerDelivery = deliveries > 0 ? latency(byActor('worker')) / deliveries : 0;
  const workerQuiet = waitPerDelivery + quietFill * (workerCpuMs + ASSUMPTIONS.handlerMs);
  const workerBusy = waitPerDelivery + busyFill * (workerCpuMs + ASSUMPTIONS.handlerMs);
  const worker = (fill: number, ms: number) =>
    deliveries > 0 ? (deliveries / fill) * lambdaInvocationCost(ASSUMPTIONS.workerMemoryMb, ms) : 0;

  const dynamodb = f.writeUnits.total * PRICES.dynamoWriteUnit + f.readUnits.total * PRICES.dynamoReadUnit;
  const scheduler = f.schedulerInvocations * PRICES.schedulerInvocation;
  // offloaded values: each PUT (HEAD and GET are priced alike) by the functions; an upload's own PUT
  // is the client's, counted in the path's note
  const s3 =
    sum(ops, (op) => op.service === 's3' && op.operation === 'PutObject') * PRICES.s3Put +
    sum(ops, (op) => op.service === 's3' && op.operation !== 'PutObject') * PRICES.s3Get;
  const sqsEsmQuiet = (esmPerInvocation * deliveries) / quietFill;
  const sqsEsmBusy = (esmPerInvocation * deliveries) / busyFill;
  const at = (esm: number, workerLambda: number) =>
    breakdown({
      sqs: (sqsPlatform + sqsByScheduler + esm) * PRICES.sqsRequest,
      dynamodb,
      lambda: apiLambda + supervisorLambda + workerLambda,
      scheduler,
      s3,
    });
  return {
    id: path.id,
    label: path.label,
    units: {
      sqsPlatform,
      sqsByScheduler,
      sqsEsmQuiet: round(sqsEsmQuiet, 2),
      sqsEsmBusy: round(sqsEsmBusy, 2),
      dynamoWriteUnits: f.writeUnits.total,
      dynamoReadUnits: f.readUnits.total,
      schedulerInvocations: f.schedulerInvocations,
      lambdaInvocations: {
        ...inv,
        workerQuiet: round(deliveries / quietFill, 2),
        workerBusy: round(deliveries / busyFill, 2),
      },
    },
    durationsMs: {
      api: round(apiMs, 1),
      workerQuiet: round(workerQuiet, 1),
      workerBusy: round(workerBusy, 1),
      supervisor: round(supervisorMs, 1),
    },
    quiet: at(sqsEsmQuiet, worker(quietFill, workerQuiet)),
    busy: at(sqsEsmBusy, worker(busyFill, workerBusy)),
  };
}

/**
 * A bare SQS → Lambda pipeline: the producer calls SendMessage itself, the event source
 * mapping receives and deletes, one Lambda runs the handler. No status, no lease, no API.
 */
function floor(overhead: OverheadResult): CostModel['floor'] {
  const cpuMs = (overhead.worker.bare.us / 1000) * cpuStretch(ASSUMPTIONS.workerMemoryMb);
  const fill = ASSUMPTIONS.batchFillBusy;
  return {
    quiet: breakdown({
      sqs: (1 + 2) * PRICES.sqsRequest,
      dynamodb: 0,
      lambda: lambdaInvocationCost(ASSUMPTIONS.workerMemoryMb, cpuMs),
      scheduler: 0,
    }),
    busy: breakdown({
      sqs: (1 + 2 / fill) * PRICES.sqsRequest,
      dynamodb: 0,
      lambda: lambdaInvocationCost(ASSUMPTIONS.workerMemoryMb, fill * cpuMs) / fill,
      scheduler: 0,
    }),
    note: '1 SendMessage + ESM ReceiveMessage + DeleteMessageBatch + 1 Lambda invocation (same memory, no AWS calls)',
  };
}

/** The supervisor runs once a minute (an EventBridge rule). */
const SUPERVISOR_PASSES_PER_MONTH = (60 * 24 * 365) / 12;

const same = (n: number): Range => ({ low: n, high: n });

/** SQS requests and Lambda invocations per job, and what they and DynamoDB cost, for a measured path. */
function measuredRow(
  cost: PathCost,
  writeUnits: number,
  row: Pick<PeerCost, 'id' | 'name' | 'basis' | 'note'>,
): PeerCost {
  const u = cost.units;
  const sqs = u.sqsPlatform + u.sqsByScheduler;
  const lambda = u.lambdaInvocations.api + u.lambdaInvocations.supervisor;
  return {
    ...row,
    writeUnits,
    sqsRequests: { quiet: round(sqs + u.sqsEsmQuiet, 2), busy: round(sqs + u.sqsEsmBusy, 2) },
    lambdaInvocations: {
      quiet: round(lambda + u.lambdaInvocations.workerQuiet, 2),
      busy: round(lambda + u.lambdaInvocations.workerBusy, 2),
    },
    quiet: same(cost.quiet.total),
    busy: same(cost.busy.total),
  };
}

/**
 * Every peer in one table beside our immediate job: the floor, the hand-built pipeline measured
 * in this run (priced by the same model as our paths, with its own measured CPU), and the
 * list-priced peers, each with its handler as one Lambda invocation of the bare handler.
 */
function peers(costs: PathCost[], overhead: OverheadResult, measured: MeasuredPeer[]): PeerCost[] {
  const rows: PeerCost[] = [];
  const immediate = costs.find((p) => p.id === 'immediate');
  if (immediate) {
    rows.push(
      measuredRow(immediate, immediate.units.dynamoWriteUnits, {
        id: 'orrery',
        name: 'Orrery, immediate job (measured)',
        basis: 'ours',
        note: 'status API, lease and fencing, retries with error history, listing, scheduling, supervisor repair',
      }),
    );
  }
  const base = floor(overhead);
  rows.push({
    id: 'floor',
    name: 'Floor: bare SQS → Lambda (modelled)',
    basis: 'modelled',
    writeUnits: 0,
    sqsRequests: { quiet: 3, busy: round(1 + 2 / ASSUMPTIONS.batchFillBusy, 2) },
    lambdaInvocations: { quiet: 1, busy: round(1 / ASSUMPTIONS.batchFillBusy, 2) },
    quiet: same(base.quiet.total),
    busy: same(base.busy.total),
    note: 'at least once: no idempotency, status, lease or retry policy',
  });
  for (const peer of measured) {
    const cost = pathCost({ id: peer.id, label: peer.name, figures: peer.figures }, overhead, peer.cpuUs);
    if (!cost) continue;
    rows.push(
      measuredRow(cost, peer.figures.writeUnits.total, {
        id: peer.id,
        name: peer.name,
        basis: 'measured',
        note: `${peer.note}; worker CPU ${peer.cpuUs} µs per job measured here (real HTTP, ours is with the transport stubbed)`,
      }),
    );
  }
  const handlerCpuMs = (overhead.worker.bare.us / 1000) * cpuStretch(ASSUMPTIONS.workerMemoryMb);
  for (const peer of PEERS) {
    const handler =
      peer.handlerInvocations * lambdaInvocationCost(ASSUMPTIONS.workerMemoryMb, handlerCpuMs + peer.handlerWaitMs);
    const range = {
      low: round((peer.pricePerUnit * peer.unitsPerJob[0] + handler) * M),
      high: round((peer.pricePerUnit * peer.unitsPerJob[1] + handler) * M),
    };
    rows.push({
      id: peer.id,
      name: `${peer.name} (list price)`,
      basis: 'modelled',
      lambdaInvocations: { quiet: peer.handlerInvocations, busy: peer.handlerInvocations },
      units: peer.units,
      quiet: range,
      busy: range,
      note: `${peer.note}; the handler's Lambda adds ${usdPerMillion(handler)}`,
      source: `${peer.source} (${peer.date})`,
    });
  }
  return rows;
}

const usdPerMillion = (perJob: number) => `$${(perJob * M).toFixed(2)}/M`;

export function costModel(paths: PathResult[], overhead: OverheadResult, measured: MeasuredPeer[] = []): CostModel {
  const costs = paths.map((p) => pathCost(p, overhead)).filter((p): p is PathCost => p !== undefined);
  const supervisor = costs.find((p) => p.id === 'supervisor-pass');
  return {
    paths: costs.filter((p) => p !== supervisor),
    fixed: {
      supervisorPassesPerMonth: SUPERVISOR_PASSES_PER_MONTH,
      supervisorPerMonth: supervisor ? round((supervisor.quiet.total / M) * SUPERVISOR_PASSES_PER_MONTH) : null,
    },
    floor: floor(overhead),
    peers: peers(costs, overhead, measured),
  };
}
