/**
 * A workflow's journal on local AWS (DynamoDB Local), in the same run:
 * - the resume of a job with N recorded steps: the journal loaded with one paged Query (what a
 *   resumed run does now) beside the one-GetItem-per-step replay of the earlier data model
 *   (rebuilt here as a GetItem loop over the same items): round trips, read units, ms;
 * - sequential steps per second of a job's first run (one conditional PutItem per step, through
 *   `createWorkflow` and `DynamoJournal`) beside a bare loop of the same conditional PutItems.
 */
import {
  BatchWriteItemCommand,
  CreateTableCommand,
  DeleteTableCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { keyOf } from '../shared/aws/attributes';
import { DynamoJournal, journalEntryItem } from '../shared/aws/dynamo-journal';
import { itemBytes } from '../shared/aws/job-item';
import { systemClock } from '../shared/core/clock';
import { journalKey } from '../shared/core/journal';
import { incarnationOf, JOB_TABLE } from '../shared/core/table';
import { createWorkflow } from '../shared/runtime/workflow';
import { LOCAL_CREDENTIALS } from '../test/local-aws/clients';
import { createTableInput } from '../test/local-aws/deploy';
import type { LocalAws } from '../test/local-aws/index';

/** One way of reading a journal back for a resume. */
export interface ResumeRead {
  roundTrips: number;
  readUnits: number;
  ms: number;
}

export interface ResumeResult {
  steps: number;
  /** The recorded items' bytes, as DynamoDB bills them. */
  journalBytes: number;
  /** ⌈bytes / 1 MB⌉ + 1: the most round trips a paged load may take. */
  boundRoundTrips: number;
  /** One Query (1 MB pages), as a resumed run reads it now. */
  paged: ResumeRead;
  /** One strongly consistent GetItem per step, in order: the earlier data model's replay. */
  perStep: ResumeRead;
}

export interface StepRateResult {
  steps: number;
  /** A job's first run: each `ctx.step` records its result (one conditional PutItem). */
  workflowPerSecond: number;
  /** The same conditional PutItems in a bare loop. */
  barePerSecond: number;
  /** workflow / bare (target ≥ 0.8). */
  ratio: number;
}

export interface JournalBench {
  resumes: ResumeResult[];
  stepRate: StepRateResult;
}

const T0 = Date.parse('2026-06-01T00:00:00.000Z');
const TTL = Math.floor(T0 / 1000) + 86_400;
const MB = 1024 * 1024;

/** A client that counts its requests and the read units DynamoDB reports (`ReturnConsumedCapacity: TOTAL`). */
function countingClient(aws: LocalAws) {
  const counted = { requests: 0, readUnits: 0 };
  const client = new DynamoDBClient({
    endpoint: aws.endpoints.dynamodb,
    region: aws.region,
    credentials: LOCAL_CREDENTIALS,
  });
  type Next = (args: { input: Record<string, unknown> }) => Promise<{ output: Record<string, unknown> }>;
  const stack = client.middlewareStack as unknown as {
    add(m: (next: Next) => Next, options: object): void;
  };
  stack.add(
    (next) => async (args) => {
      counted.requests += 1;
      const out = await next({ ...args, input: { ...args.input, ReturnConsumedCapacity: 'TOTAL' } });
      const units = (out.output.ConsumedCapacity as { CapacityUnits?: number } | undefined)?.CapacityUnits ?? 0;
      counted.readUnits += units;
      return out;
    },
    { step: 'initialize', name: 'benchCountReads' },
  );
  const reset = () => {
    counted.requests = 0;
    counted.readUnits = 0;
  };
  return { client, counted, reset };
}

/** Writes `steps` recorded steps of a job (≈ 60 bytes of result each) with BatchWriteItem; returns their bytes. */
async function seedJournal(client: DynamoDBClient, table: string, jobId: string, createdAt: string, steps: number) {
  const incarnation = incarnationOf(createdAt);
  let bytes = 0;
  const items = Array.from({ length: steps }, (_, i) => {
    const item = journalEntryItem({
      jobId,
      incarnation,
      kind: 'step',
      name: `step-${i}`,
      value: { i, ok: true, ref: `ref-${i.toString(36).padStart(8, '0')}` },
      at: T0 + i,
      expiresAt: TTL,
    });
    bytes += itemBytes(item);
    return item;
  });
  for (let start = 0; start < items.length; start += 25) {
    let pending = items.slice(start, start + 25).map((Item) => ({ PutRequest: { Item } }));
    while (pending.length > 0) {
      const out = await client.send(new BatchWriteItemCommand({ RequestItems: { [table]: pending } }));
      pending = (out.UnprocessedItems?.[table] ?? []) as typeof pending;
    }
  }
  return bytes;
}

async function measureResume(aws: LocalAws, table: string, steps: number, seq: number): Promise<ResumeResult> {
  const { client, counted, reset } = countingClient(aws);
  try {
    const job = { id: `resume-${steps}-${seq}`, createdAt: new Date(T0).toISOString(), attempts: 1, resumes: 1 };
    const journalBytes = await seedJournal(client, table, job.id, job.createdAt, steps);

    // now: a resumed run replays every step; the journal is loaded once, in pages
    reset();
    let started = performance.now();
    const workflow = createWorkflow({
      job,
      journal: new DynamoJournal(client, table),
      clock: systemClock,
      signal: new AbortController().signal,
      expiresAt: () => TTL,
    });
    for (let i = 0; i < steps; i++) {
      await workflow.step(`step-${i}`, () => {
        throw new Error(`step-${i} was not recorded`);
      });
    }
    const paged = { roundTrips: counted.requests, readUnits: counted.readUnits, ms: performance.now() - started };

    // before: one strongly consistent GetItem per step, in order, over the same items
    reset();
    started = performance.now();
    const scope = { jobId: job.id, incarnation: incarnationOf(job.createdAt) };
    for (let i = 0; i < steps; i++) {
      const out = await client.send(
        new GetItemCommand({
          TableName: table,
          Key: keyOf(journalKey(scope, 'step', `step-${i}`)),
          ConsistentRead: true,
        }),
      );
      if (!out.Item) throw new Error(`step-${i} is missing`);
    }
    const perStep = { roundTrips: counted.requests, readUnits: counted.readUnits, ms: performance.now() - started };
    return { steps, journalBytes, boundRoundTrips: Math.ceil(journalBytes / MB) + 1, paged, perStep };
  } finally {
    client.destroy();
  }
}

async function measureStepRate(aws: LocalAws, table: string, steps: number): Promise<StepRateResult> {
  const client = new DynamoDBClient({
    endpoint: aws.endpoints.dynamodb,
    region: aws.region,
    credentials: LOCAL_CREDENTIALS,
  });
  try {
    const value = (i: number) => ({ i, ok: true, ref: `ref-${i.toString(36).padStart(8, '0')}` });
    // warm both paths (connections, JIT) on throwaway keys
    const bare = async (jobId: string, count: number) => {
      const incarnation = incarnationOf(new Date(T0).toISOString());
      for (let i = 0; i < count; i++) {
        const item = journalEntryItem({
          jobId,
          incarnation,
          kind: 'step',
          name: `s-${i}`,
          value: value(i),
          at: Date.now(),
          expiresAt: TTL,
        });
        await client.send(
          new PutItemCommand({
            TableName: table,
            Item: item,
            ConditionExpression: 'attribute_not_exists(pk)',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
      }
    };
    const viaWorkflow = async (jobId: string, count: number) => {
      const workflow = createWorkflow({
        job: { id: jobId, createdAt: new Date(T0).toISOString(), attempts: 1 },
        journal: new DynamoJournal(client, table),
        clock: systemClock,
        signal: new AbortController().signal,
        expiresAt: () => TTL,
      });
      for (let i = 0; i < count; i++) await workflow.step(`s-${i}`, () => value(i));
    };
    await bare('warm-bare', 50);
    await viaWorkflow('warm-workflow', 50);
    // alternate halves so that load on the machine falls on both alike
    let bareMs = 0;
    let workflowMs = 0;
    const half = Math.ceil(steps / 2);
    for (let round = 0; round < 2; round++) {
      let started = performance.now();
      await bare(`bare-${round}`, half);
      bareMs += performance.now() - started;
      started = performance.now();
      await viaWorkflow(`workflow-${round}`, half);
      workflowMs += performance.now() - started;
    }
    const workflowPerSecond = (2 * half * 1000) / workflowMs;
    const barePerSecond = (2 * half * 1000) / bareMs;
    return { steps: 2 * half, workflowPerSecond, barePerSecond, ratio: workflowPerSecond / barePerSecond };
  } finally {
    client.destroy();
  }
}

/** Runs the journal measurements on a table of their own (created from JOB_TABLE, deleted after). */
export async function measureJournal(
  aws: LocalAws,
  size: { resumeSteps: readonly number[]; sequentialSteps: number },
): Promise<JournalBench> {
  const admin = new DynamoDBClient({
    endpoint: aws.endpoints.dynamodb,
    region: aws.region,
    credentials: LOCAL_CREDENTIALS,
  });
  const table = `bench-journal-${process.pid}-${Date.now().toString(36)}`;
  await admin.send(new CreateTableCommand(createTableInput(table, JOB_TABLE)));
  try {
    const resumes: ResumeResult[] = [];
    for (const [seq, steps] of size.resumeSteps.entries()) resumes.push(await measureResume(aws, table, steps, seq));
    const stepRate = await measureStepRate(aws, table, size.sequentialSteps);
    return { resumes, stepRate };
  } finally {
    await admin.send(new DeleteTableCommand({ TableName: table })).catch(() => undefined);
    admin.destroy();
  }
}
