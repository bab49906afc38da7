/**
 * CPU time our code adds per job, measured with `process.cpuUsage()` in this process (no
 * emulator in it): the worker runtime (`createWorker`: parse, claim, run, complete, batch
 * response) around a no-op handler versus the same handler called bare over the same SQS
 * events; and the enqueue API handler per request versus a bare parse-and-answer handler.
 */
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { allowEveryone } from '../shared/api/access';
import { createApiHandler } from '../shared/api/handler';
import { DynamoJobStore } from '../shared/aws/dynamo-job-store';
import { SqsJobQueue } from '../shared/aws/sqs-job-queue';
import type { PlatformConfig } from '../shared/config';
import type { Job } from '../shared/core/job';
import type { JobQueue, JobStore } from '../shared/core/ports';
import { createLogger, type LogLevel } from '../shared/logger';
import type { JobDefinition } from '../shared/runtime/job-definition';
import { createWorker } from '../shared/runtime/worker';
import { functionUrlEvent, noop, noopJob, queuedJob } from './fixtures';
import { MemoryJobStore, NullQueue, NullScheduler } from './memory-ports';
import { stubDynamo, stubSqs } from './stub-aws';

export interface CpuFigure {
  /** CPU µs per job (or per request), median over rounds. */
  us: number;
  /** Log output per job at this level, in bytes (CloudWatch Logs ingests it). */
  logBytes?: number;
}

export interface OverheadResult {
  jobsPerRound: number;
  rounds: number;
  worker: {
    bare: CpuFigure;
    runtimeInfo: CpuFigure;
    runtimeWarn: CpuFigure;
    runtimeWithSdk: CpuFigure;
    /** runtimeInfo − bare: what the goal (≤ 0.5 ms per job) is checked against. */
    overheadUs: number;
    ratio: number;
  };
  api: { bare: CpuFigure; handler: CpuFigure; handlerWithSdk: CpuFigure };
}

const QUEUE_URL = 'https://sqs.us-east-1.amazonaws.com/123456789012/orrery-noop';
const config: PlatformConfig = {
  tableName: 'orrery-jobs',
  routes: { noop: { queueUrl: QUEUE_URL, queueArn: 'arn:aws:sqs:us-east-1:123456789012:orrery-noop' } },
  scheduleGroup: 'orrery',
  schedulerRoleArn: 'arn:aws:iam::123456789012:role/orrery-scheduler',
  retentionDays: 30,
  logLevel: 'info',
};

function record(id: string): SQSRecord {
  const now = String(Date.now());
  return {
    messageId: randomUUID(),
    receiptHandle: `AQEB${randomUUID()}`,
    body: JSON.stringify({ v: 1, id, type: 'noop' }),
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: now,
      SenderId: 'AROABENCH',
      ApproximateFirstReceiveTimestamp: now,
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: config.routes.noop?.queueArn ?? '',
    awsRegion: 'us-east-1',
  };
}

/** `count` queued jobs in `store`, delivered in events of 10 records (the ESM's default batch). */
async function seed(store: MemoryJobStore | undefined, count: number): Promise<SQSEvent[]> {
  const events: SQSEvent[] = [];
  const now = Date.now();
  for (let i = 0; i < count; i += 10) {
    const records: SQSRecord[] = [];
    for (let j = i; j < Math.min(count, i + 10); j++) {
      const id = randomUUID();
      if (store) await store.create(queuedJob(id, now));
      records.push(record(id));
    }
    events.push({ Records: records });
  }
  return events;
}

type BatchHandler = (event: SQSEvent) => Promise<SQSBatchResponse>;

async function cpuUs(run: () => Promise<void>): Promise<number> {
  const before = process.cpuUsage();
  await run();
  const used = process.cpuUsage(before);
  return used.user + used.system;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? 0;
}

/** A logger at `level` whose output is counted instead of written. */
function countingLogger(level: LogLevel) {
  const logs = { bytes: 0 };
  const logger = createLogger({
    level,
    sink: (line) => {
      logs.bytes += Buffer.byteLength(line) + 1;
    },
  });
  return { logs, logger };
}

/** The same no-op handler, called bare: parse each body, run, report no failures. */
const bare: BatchHandler = async (event) => {
  await Promise.all(
    event.Records.map(async (r) => {
      const message = JSON.parse(r.body) as { id: string };
      await noop.run({}, { jobId: message.id } as never);
    }),
  );
  return { batchItemFailures: [] };
};

async function measureWorker(jobs: number, rounds: number): Promise<OverheadResult['worker']> {
  const definition = noop as unknown as JobDefinition;
  const claimed: Job = { ...queuedJob('bench-stub', Date.now()), state: 'running', attempts: 1, leaseToken: 1 };
  const variants: Record<string, { level: LogLevel; sdk: boolean }> = {
    runtimeInfo: { level: 'info', sdk: false },
    runtimeWarn: { level: 'warn', sdk: false },
    runtimeWithSdk: { level: 'info', sdk: true },
  };
  const samples: Record<string, number[]> = { bare: [], runtimeInfo: [], runtimeWarn: [], runtimeWithSdk: [] };
  const logBytes: Record<string, number> = {};
  for (let round = -1; round < rounds; round++) {
    const bareEvents = await seed(undefined, jobs);
    const bareUs = await cpuUs(async () => {
      for (const event of bareEvents) await bare(event);
    });
    if (round >= 0) samples.bare?.push(bareUs / jobs);
    for (const [name, variant] of Object.entries(variants)) {
      const { logs, logger } = countingLogger(variant.level);
      const memory = new MemoryJobStore();
      const store: JobStore = variant.sdk ? new DynamoJobStore(stubDynamo(claimed), config.tableName) : memory;
      const queue: JobQueue = variant.sdk ? new SqsJobQueue(stubSqs()) : new NullQueue();
      const worker = createWorker(definition, { config, store, queue, logger });
      const events = await seed(variant.sdk ? undefined : memory, jobs);
      const us = await cpuUs(async () => {
        for (const event of events) {
          const response = await worker(event);
          if (response.batchItemFailures.length > 0) throw new Error(`${name}: the worker reported failures`);
        }
      });
      if (round >= 0) samples[name]?.push(us / jobs);
      logBytes[name] = logs.bytes / jobs;
    }
  }
  const figure = (name: string): CpuFigure => ({
    us: Math.round(median(samples[name] ?? []) * 10) / 10,
    ...(logBytes[name] !== undefined ? { logBytes: Math.round(logBytes[name] ?? 0) } : {}),
  });
  const runtimeInfo = figure('runtimeInfo');
  const bareFigure = figure('bare');
  return {
    bare: bareFigure,
    runtimeInfo,
    runtimeWarn: figure('runtimeWarn'),
    runtimeWithSdk: figure('runtimeWithSdk'),
    overheadUs: Math.round((runtimeInfo.us - bareFigure.us) * 10) / 10,
    ratio: Math.round((runtimeInfo.us / Math.max(0.1, bareFigure.us)) * 10) / 10,
  };
}

async function measureApi(requests: number, rounds: number): Promise<OverheadResult['api']> {
  const logger = createLogger({ level: 'info', sink: () => {} });
  const catalog = [noopJob];
  const scheduler = new NullScheduler();
  const memoryApi = () =>
    createApiHandler({
      access: allowEveryone(),
      config,
      catalog,
      store: new MemoryJobStore(),
      queue: new NullQueue(),
      scheduler,
      logger,
    });
  const sdkApi = () =>
    createApiHandler({
      access: allowEveryone(),
      config,
      catalog,
      store: new DynamoJobStore(stubDynamo(queuedJob('unused', Date.now())), config.tableName),
      queue: new SqsJobQueue(stubSqs()),
      scheduler,
      logger,
    });
  const bareApi = async (event: APIGatewayProxyEventV2) => {
    const body = JSON.parse(event.body ?? '{}') as Record<string, unknown>;
    return {
      statusCode: 201,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: randomUUID(), ...body }),
    };
  };
  const samples: Record<string, number[]> = { bare: [], handler: [], handlerWithSdk: [] };
  for (let round = -1; round < rounds; round++) {
    const handlers: Record<string, (event: APIGatewayProxyEventV2) => Promise<{ statusCode?: number }>> = {
      bare: bareApi,
      handler: memoryApi(),
      handlerWithSdk: sdkApi(),
    };
    for (const [name, handler] of Object.entries(handlers)) {
      const events = Array.from({ length: requests }, () =>
        functionUrlEvent('POST', '/jobs', { type: 'noop', payload: {} }),
      );
      const us = await cpuUs(async () => {
        for (const event of events) {
          const response = await handler(event);
          if (response.statusCode !== 201) throw new Error(`${name}: enqueue answered ${response.statusCode}`);
        }
      });
      if (round >= 0) samples[name]?.push(us / requests);
    }
  }
  const figure = (name: string): CpuFigure => ({ us: Math.round(median(samples[name] ?? []) * 10) / 10 });
  return { bare: figure('bare'), handler: figure('handler'), handlerWithSdk: figure('handlerWithSdk') };
}

/** Runs every measurement `rounds` times (after one warm-up round) over `jobs` jobs each. */
export async function measureOverhead(jobs: number, rounds: number): Promise<OverheadResult> {
  const worker = await measureWorker(jobs, rounds);
  const api = await measureApi(jobs, rounds);
  return { jobsPerRound: jobs, rounds, worker, api };
}
