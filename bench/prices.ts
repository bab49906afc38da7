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
  /** Lambda Function URL: no request charge (API Gateway HTTP API would be $1.00 per M). */
  functionUrlRequest: 0,
  httpApiRequest: 1.0 / 1e6,
} as const;

/** Peers, priced per job (AWS-FACTS.md 2026-11). `unitsPerJob` states how many billed units one job takes. */
export const PEERS = [
  {
    name: 'Google Cloud Tasks',
    pricePerUnit: 0.4 / 1e6,
    unit: 'operation',
    unitsPerJob: [2, 2],
    note: 'CreateTask + 1 push delivery attempt = 2 billable operations at $0.40/M; the handler compute is extra',
  },
  {
    name: 'Upstash QStash',
    pricePerUnit: 1 / 1e5,
    unit: 'message',
    unitsPerJob: [1, 1],
    note: '$1 per 100 k messages; the handler compute is extra',
  },
  {
    name: 'Step Functions Standard',
    pricePerUnit: 25 / 1e6,
    unit: 'state transition',
    unitsPerJob: [3, 4],
    note: 'start → Task (Lambda invoke) → Succeed ≈ 3–4 transitions at $25/M; the task Lambda is extra',
  },
] as const;

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
  latencyMs: { dynamodb: 8, sqs: 12, scheduler: 30 } as Record<string, number>,
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
