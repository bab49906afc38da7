/**
 * "Exactly once, by hand": the pipeline a team would build instead of Orrery, measured on the
 * same local AWS with the same counting middleware. A producer calls SendMessage; the event
 * source mapping receives; the Lambda runs each record through Powertools idempotency
 * (`makeIdempotent` over its `DynamoDBPersistenceLayer`, records in parallel as Powertools'
 * batch processor does by default); the mapping deletes what succeeded.
 *
 * Powertools writes an INPROGRESS record before the handler and a COMPLETED record (with the
 * result) after it, in a table of its own. That is all it keeps: no status API, no lease or
 * fencing of a slow attempt, no listing, no retry policy or error history, no scheduling. It is
 * the floor for exactly-once processing built by hand.
 */
import { performance } from 'node:perf_hooks';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import {
  CreateTableCommand,
  DynamoDBClient,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { type LocalAws, localClients, runOnce, uniquePrefix } from '../test/local-aws/index';
import { asActor, CallRecorder, countedEsmClient, instrument } from './counting-middleware';
import { analyse, type Invocation, type JobTrace, type PathFigures } from './path-analysis';

export interface MeasuredPeer {
  id: string;
  name: string;
  note: string;
  figures: PathFigures;
  /** Median CPU of one worker invocation (one job), µs, in this process: Powertools, the SDK and its HTTP. */
  cpuUs: number;
}

/** The idempotency table as Powertools documents it: partition key `id` (S), TTL on `expiration`. */
async function createIdempotencyTable(dynamo: DynamoDBClient, tableName: string): Promise<void> {
  await dynamo.send(
    new CreateTableCommand({
      TableName: tableName,
      KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  await waitUntilTableExists({ client: dynamo, maxWaitTime: 30 }, { TableName: tableName });
  await dynamo.send(
    new UpdateTimeToLiveCommand({
      TableName: tableName,
      TimeToLiveSpecification: { AttributeName: 'expiration', Enabled: true },
    }),
  );
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)] ?? 0;

/**
 * Sends `jobs` jobs one at a time (as the immediate path does: `{ id, payload }`, the payload the
 * immediate path's) and delivers each to the idempotent handler, one record per invocation.
 * Call after `aws.applyEnv()`: every client is built from the environment, as in production.
 */
export async function measurePowertoolsPeer(aws: LocalAws, jobs: number): Promise<MeasuredPeer> {
  const prefix = uniquePrefix('bench-handmade');
  const recorder = new CallRecorder();
  const harness = localClients(aws);
  const dynamo = instrument(new DynamoDBClient({}), 'dynamodb', recorder);
  const producer = instrument(new SQSClient({}), 'sqs', recorder, 'producer');
  const esm = countedEsmClient(recorder);
  try {
    const tableName = `${prefix}-idempotency`;
    await createIdempotencyTable(harness.dynamo, tableName);
    const created = await harness.sqs.send(new CreateQueueCommand({ QueueName: `${prefix}-jobs` }));
    const queueUrl = created.QueueUrl ?? '';
    const attributes = await harness.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
    );
    const queueArn = attributes.Attributes?.QueueArn ?? '';

    // The pipeline as its documentation sets it up: the key is the job id inside the body, so a
    // producer's retried SendMessage (a new messageId) is still the same job.
    const config = new IdempotencyConfig({ eventKeyJmesPath: 'powertools_json(body).id' });
    const persistenceStore = new DynamoDBPersistenceLayer({ tableName, awsSdkV3Client: dynamo });
    const processRecord = async (record: SQSRecord) => (JSON.parse(record.body) as { payload: unknown }).payload;
    const processIdempotently = makeIdempotent(processRecord, {
      persistenceStore,
      config,
      keyPrefix: 'bench-handmade.processRecord',
    });
    const handler = async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
      config.registerLambdaContext(context);
      const outcomes = await Promise.allSettled(event.Records.map((record) => processIdempotently(record)));
      return {
        batchItemFailures: event.Records.filter((_, i) => outcomes[i]?.status === 'rejected').map((record) => ({
          itemIdentifier: record.messageId,
        })),
      };
    };

    const traces: JobTrace[] = [];
    const cpu: number[] = [];
    for (let i = -1; i < jobs; i++) {
      // i = -1: an uncounted warm-up (connections, JIT); counts are the same.
      const mark = recorder.mark();
      const body = JSON.stringify({ id: `${prefix}-${i}`, payload: { hello: 'world', i } });
      await asActor('producer', () => producer.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body })));
      const invocations: Invocation[] = [];
      for (let polls = 0; invocations.length === 0; polls++) {
        if (polls > 10) throw new Error(`hand-built pipeline: job ${i} was never delivered`);
        const before = recorder.mark();
        let ms = 0;
        let usage = 0;
        let records = 0;
        const result = await runOnce({
          queueUrl,
          queueArn,
          functionName: 'bench-handmade',
          batchSize: 1,
          waitTimeSeconds: 1,
          sqs: esm,
          handler: async (event, context) => {
            records = event.Records.length;
            const t0 = performance.now();
            const c0 = process.cpuUsage();
            try {
              return await asActor('worker', () => handler(event, context));
            } finally {
              const c = process.cpuUsage(c0);
              usage = c.user + c.system;
              ms = performance.now() - t0;
            }
          },
        });
        if (result.failedIds.length > 0)
          throw new Error(`hand-built pipeline: job ${i} failed: ${String(result.error)}`);
        if (result.messageIds.length === 0) continue;
        invocations.push({ calls: recorder.since(before).filter((c) => c.actor === 'worker'), records, ms });
        if (i >= 0) cpu.push(usage);
      }
      if (i < 0) continue;
      const calls = recorder.since(mark);
      traces.push({
        jobs: 1,
        // The producer's SendMessage stands where our API is: billed, but no Lambda runs it.
        api: calls.filter((c) => c.actor === 'producer'),
        apiInvocations: 0,
        apiMs: 0,
        invocations,
        esm: calls.filter((c) => c.actor === 'esm' && !(c.operation === 'ReceiveMessage' && c.messages === 0)),
        supervisor: [],
        supervisorInvocations: 0,
        schedulerInvocations: 0,
      });
    }
    return {
      id: 'handmade-powertools',
      name: 'Built by hand: SQS → Lambda + Powertools idempotency (measured)',
      note:
        'INPROGRESS PutItem + COMPLETED UpdateItem per job in its own table; no status API, no lease, ' +
        'no listing, no retries or error history, no scheduling: the floor for exactly once by hand',
      figures: analyse(traces),
      cpuUs: Math.round(median(cpu)),
    };
  } finally {
    esm.destroy();
    producer.destroy();
    dynamo.destroy();
    harness.destroy();
  }
}
