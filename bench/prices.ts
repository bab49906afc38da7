/**
 * Every price and every modelling assumption the cost model uses, in one place.
 *
 * Prices: AWS list prices, us-east-1, as in shared/AWS-FACTS.md (2026-11). Free tiers are
 * ignored (a cost per million jobs should not depend on how many other jobs ran this month).
 */

export const PRICE_SOURCE = 'AWS list prices, us-east-1, as in AWS-FACTS.md 2026-11 (free tiers ignored)';

/** USD. */
export const PRICES = {
  /** Per request; each 64 KB chunk of a request is one request. A batch call (≤ 10 entries) is one request. */
  sqsRequest: 0.4 / 1e6,
  /** DynamoDB on-demand, per write request unit (1 KB) and read request unit (4 KB strongly consistent). */
  dynamoWriteUnit: 0.625 / 1e6,
  dynamoReadUnit: 0.125 / 1e6,
  /** Lambda, per invocation and per GB-second (the x86 rate AWS-FACTS.md lists; arm64 is ~20 % lower). */
  lambdaRequest: 0.2 / 1e6,
  lambdaGbSecond: 0.0000166667,
  /** EventBridge Scheduler, per invocation (target delivery). Creating and deleting schedules is not billed. */
  schedulerInvocation: 1.0 / 1e6,
  /** S3 Standard, us-east-1: PUT (and COPY, POST, LIST) $0.005 per 1,000 requests. */
  s3Put: 0.005 / 1e3,
  /** S3 Standard, us-east-1: GET (and HEAD, SELECT) $0.0004 per 1,000 requests. */
  s3Get: 0.0004 / 1e3,
  /** S3 Standard, us-east-1, first 50 TB: $0.023 per GB-month. */
  s3GbMonth: 0.023,
  /** Lambda Function URL: no request charge (API Gateway HTTP API would be $1.00 per M). */
  functionUrlRequest: 0,
  httpApiRequest: 1.0 / 1e6,
} as const;

/** A peer priced from its list price: `unitsPerJob` billed units of its own meter per job (low, high). */
export interface PeerPrice {
  id: string;
  name: string;
  /** USD per billed unit. */
  pricePerUnit: number;
  unit: string;
  unitsPerJob: readonly [number, number];
  /** What those units are, for one job that succeeds first time. */
  units: string;
  /**
   * The job's handler, which the peer's own charge leaves out, modelled as this many 512 MB Lambda
   * invocations of the bare handler (the floor's CPU), each waiting `handlerWaitMs` on the peer.
   */
  handlerInvocations: number;
  handlerWaitMs: number;
  /** Where the price comes from, and when it was read. */
  source: string;
  date: string;
  note: string;
}

/** Peers priced from list prices (free tiers ignored, as for ours). */
export const PEERS: readonly PeerPrice[] = [
  {
    id: 'lambda-durable',
    name: 'AWS Lambda durable functions, one-step job',
    pricePerUnit: 8 / 1e6,
    unit: 'durable operation',
    unitsPerJob: [2, 2],
    units:
      "starting the execution + the step's checkpoint = 2 durable operations (assumed: AWS counts starts, steps, waits and callbacks)",
    handlerInvocations: 1,
    handlerWaitMs: 8,
    source:
      'AWS Lambda pricing page, durable functions: $8.00 per million durable operations (as transcribed 2026-09-20); AWS-FACTS.md',
    date: '2026-11',
    note: "the function runs once (no replay) and waits on one checkpoint (assumed 8 ms, a DynamoDB write's); per-GB charges for checkpoint data written and retained are left out",
  },
  {
    id: 'step-functions',
    name: 'Step Functions Standard, one Task state',
    pricePerUnit: 25 / 1e6,
    unit: 'state transition',
    unitsPerJob: [3, 4],
    units: 'start → Task (Lambda invoke) → Succeed ≈ 3–4 state transitions (assumed)',
    handlerInvocations: 1,
    handlerWaitMs: 0,
    source: 'AWS Step Functions pricing, Standard workflows: $25 per million state transitions; AWS-FACTS.md',
    date: '2026-11',
    note: 'the task Lambda is the handler',
  },
  {
    id: 'qstash',
    name: 'Upstash QStash',
    pricePerUnit: 1 / 1e5,
    unit: 'message',
    unitsPerJob: [1, 1],
    units: '1 message (each delivery attempt is billed as one)',
    handlerInvocations: 1,
    handlerWaitMs: 0,
    source: 'upstash.com/pricing/qstash, pay as you go: $1 per 100 k messages; AWS-FACTS.md',
    date: '2026-11',
    note: 'pushes to an HTTP endpoint: priced here as a Lambda Function URL',
  },
  {
    id: 'cloud-tasks',
    name: 'Google Cloud Tasks',
    pricePerUnit: 0.4 / 1e6,
    unit: 'operation',
    unitsPerJob: [2, 2],
    units: 'CreateTask + 1 push delivery attempt = 2 billable operations (≤ 32 KB each)',
    handlerInvocations: 1,
    handlerWaitMs: 0,
    source:
      'cloud.google.com/tasks/pricing: $0.40 per million billable operations ("an API call or push delivery attempt"); AWS-FACTS.md',
    date: '2026-11',
    note: 'pushes to an HTTP endpoint: priced here as a Lambda Function URL',
  },
];

/**
 * Modelling assumptions. None of these is measured by the bench; they turn measured request
 * counts and CPU times into Lambda durations.
 */
export const ASSUMPTIONS = {
  /**
   * Memory of the API and worker functions. infra/constructs/job-platform.ts defaults the API
   * to 512 MB (`apiMemoryMb`) and job-type-options.ts the workers to 512 MB; the issue suggested
   * pricing the API at 256 MB. We price what `cdk deploy` gives by default.
   */
  apiMemoryMb: 512,
  workerMemoryMb: 512,
  /**
   * Wall-clock latency of one in-region call from Lambda, in ms (typical published figures,
   * not measured here): a Lambda's billed duration is mostly waiting on these.
   */
  latencyMs: { dynamodb: 8, sqs: 12, scheduler: 30, s3: 25 } as Record<string, number>,
  /** Messages per worker invocation. 1 is what a lightly loaded queue gets; 10 under load. */
  batchFillQuiet: 1,
  batchFillBusy: 10,
  /** The handler itself is a no-op: its own time is the same on every platform and left out. */
  handlerMs: 0,
  /**
   * Lambda gives a function CPU in proportion to its memory, one vCPU at 1,769 MB: CPU time
   * measured here on a full core is stretched by 1,769 / memory MB.
   */
  fullVcpuMemoryMb: 1769,
} as const;

/** Lambda cost of one invocation with `memoryMb`, billed per started millisecond. */
export function lambdaInvocationCost(memoryMb: number, durationMs: number): number {
  const billedMs = Math.max(1, Math.ceil(durationMs));
  return PRICES.lambdaRequest + (memoryMb / 1024) * (billedMs / 1000) * PRICES.lambdaGbSecond;
}
