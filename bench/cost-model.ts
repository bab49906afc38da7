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
    lambdaInvocations: { api: number; worker: number };
  };
  /** Modelled Lambda durations (ms): the API call, and one worker invocation (quiet: 1 job, busy: 10). */
  durationsMs: { api: number; workerQuiet: number; workerBusy: number };
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
  const busyFill = ASSUMPTIONS.batchFillBusy;
  const sqsPlatform = sum(ops, (op) => op.service === 'sqs' && (op.actor === 'api' || op.actor === 'worker'));
  const sqsEsm = sum(ops, (op) => op.actor === 'esm');
  const sqsByScheduler = f.schedulerInvocations; // each fire is one SendMessage, billed to the account
  const sqsEsmQuiet = sqsEsm / ASSUMPTIONS.batchFillQuiet;
  const sqsEsmBusy = sqsEsm / busyFill;

  const apiCpuMs = (overhead.api.handlerWithSdk.us / 1000) * cpuStretch(ASSUMPTIONS.apiMemoryMb);
  const apiMs = latency(ops.filter((op) => op.actor === 'api')) + apiCpuMs;
  const invocations = Math.max(1, f.lambdaInvocations.worker);
  const workerCpuMs = (overhead.worker.runtimeWithSdk.us / 1000) * cpuStretch(ASSUMPTIONS.workerMemoryMb);
  const waitPerInvocation = latency(ops.filter((op) => op.actor === 'worker')) / invocations;
  const workerQuiet = waitPerInvocation + workerCpuMs + ASSUMPTIONS.handlerMs;
  const workerBusy = waitPerInvocation + busyFill * (workerCpuMs + ASSUMPTIONS.handlerMs);
  const apiLambda = f.lambdaInvocations.api * lambdaInvocationCost(ASSUMPTIONS.apiMemoryMb, apiMs);

  const dynamodb = f.writeUnits.total * PRICES.dynamoWriteUnit + f.readUnits.total * PRICES.dynamoReadUnit;
  const scheduler = f.schedulerInvocations * PRICES.schedulerInvocation;
  const quiet = breakdown({
    sqs: (sqsPlatform + sqsByScheduler + sqsEsmQuiet) * PRICES.sqsRequest,
    dynamodb,
    lambda: apiLambda + invocations * lambdaInvocationCost(ASSUMPTIONS.workerMemoryMb, workerQuiet),
    scheduler,
  });
  const busy = breakdown({
    sqs: (sqsPlatform + sqsByScheduler + sqsEsmBusy) * PRICES.sqsRequest,
    dynamodb,
    lambda: apiLambda + (invocations * lambdaInvocationCost(ASSUMPTIONS.workerMemoryMb, workerBusy)) / busyFill,
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
      lambdaInvocations: f.lambdaInvocations,
    },
    durationsMs: { api: round(apiMs, 1), workerQuiet: round(workerQuiet, 1), workerBusy: round(workerBusy, 1) },
    quiet,
    busy,
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

export function costModel(paths: PathResult[], overhead: OverheadResult): CostModel {
  return {
    paths: paths.map((p) => pathCost(p, overhead)).filter((p): p is PathCost => p !== undefined),
    floor: floor(overhead),
    peers: PEERS.map((peer) => ({
      name: peer.name,
      low: round(peer.pricePerUnit * peer.unitsPerJob[0] * M),
      high: round(peer.pricePerUnit * peer.unitsPerJob[1] * M),
      note: peer.note,
    })),
  };
}
