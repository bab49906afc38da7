/**
 * Cost per million jobs at list prices, from the measured request counts, write units and CPU
 * times, plus the stated assumptions in prices.ts (latencies, memory, batch fill).
 */
import type { OverheadResult } from './overhead';
import type { OperationCount } from './path-analysis';
import type { PathResult } from './paths';
import { ASSUMPTIONS, lambdaInvocationCost, PEERS, PRICES } from './prices';

/** USD per million jobs. */
export interface CostBreakdown {
  sqs: number;
  dynamodb: number;
  lambda: number;
  scheduler: number;
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

export interface PeerCost {
  name: string;
  low: number;
  high: number;
  note: string;
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
  const perMillion = {
    sqs: round(parts.sqs * M),
    dynamodb: round(parts.dynamodb * M),
    lambda: round(parts.lambda * M),
    scheduler: round(parts.scheduler * M),
  };
  return { ...perMillion, total: round(parts.sqs * M + parts.dynamodb * M + parts.lambda * M + parts.scheduler * M) };
}

const sum = (ops: OperationCount[], pick: (op: OperationCount) => boolean) =>
  ops.filter(pick).reduce((total, op) => total + op.perJob, 0);

/** ms of waiting on AWS for these operations, done one after another. */
const latency = (ops: OperationCount[]) =>
  ops.reduce((total, op) => total + op.perJob * (ASSUMPTIONS.latencyMs[op.service] ?? 10), 0);

const cpuStretch = (memoryMb: number) => ASSUMPTIONS.fullVcpuMemoryMb / memoryMb;

function pathCost(path: PathResult, overhead: OverheadResult): PathCost | undefined {
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

  const workerCpuMs = (overhead.worker.runtimeWithSdk.us / 1000) * cpuStretch(ASSUMPTIONS.workerMemoryMb);
  const waitPerDelivery = deliveries > 0 ? latency(byActor('worker')) / deliveries : 0;
  const workerQuiet = waitPerDelivery + quietFill * (workerCpuMs + ASSUMPTIONS.handlerMs);
  const workerBusy = waitPerDelivery + busyFill * (workerCpuMs + ASSUMPTIONS.handlerMs);
  const worker = (fill: number, ms: number) =>
    deliveries > 0 ? (deliveries / fill) * lambdaInvocationCost(ASSUMPTIONS.workerMemoryMb, ms) : 0;

  const dynamodb = f.writeUnits.total * PRICES.dynamoWriteUnit + f.readUnits.total * PRICES.dynamoReadUnit;
  const scheduler = f.schedulerInvocations * PRICES.schedulerInvocation;
  const sqsEsmQuiet = (esmPerInvocation * deliveries) / quietFill;
  const sqsEsmBusy = (esmPerInvocation * deliveries) / busyFill;
  const at = (esm: number, workerLambda: number) =>
    breakdown({
      sqs: (sqsPlatform + sqsByScheduler + esm) * PRICES.sqsRequest,
      dynamodb,
      lambda: apiLambda + supervisorLambda + workerLambda,
      scheduler,
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

export function costModel(paths: PathResult[], overhead: OverheadResult): CostModel {
  const costs = paths.map((p) => pathCost(p, overhead)).filter((p): p is PathCost => p !== undefined);
  const supervisor = costs.find((p) => p.id === 'supervisor-pass');
  return {
    paths: costs.filter((p) => p !== supervisor),
    fixed: {
      supervisorPassesPerMonth: SUPERVISOR_PASSES_PER_MONTH,
      supervisorPerMonth: supervisor ? round((supervisor.quiet.total / M) * SUPERVISOR_PASSES_PER_MONTH) : null,
    },
    floor: floor(overhead),
    peers: PEERS.map((peer) => ({
      name: peer.name,
      low: round(peer.pricePerUnit * peer.unitsPerJob[0] * M),
      high: round(peer.pricePerUnit * peer.unitsPerJob[1] * M),
      note: peer.note,
    })),
  };
}
