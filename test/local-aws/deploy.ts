import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DeleteTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import {
  CreateScheduleGroupCommand,
  DeleteScheduleGroupCommand,
  GetScheduleGroupCommand,
  type SchedulerClient,
} from '@aws-sdk/client-scheduler';
import { CreateQueueCommand, DeleteQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { type PlatformConfig, platformConfigToEnv } from '../../shared/config';
import {
  lambdaTimeoutSeconds,
  MAX_RECEIVE_COUNT,
  queueNames,
  RETENTION_SECONDS,
  visibilityTimeoutSeconds,
} from '../../shared/core/queue-settings';
import { JOB_TABLE, type TableDefinition } from '../../shared/core/table';
import type { LogLevel } from '../../shared/logger';
import { LOCAL_CREDENTIALS, type LocalAwsTarget, localClients } from './clients';
import { LOCAL_ACCOUNT_ID } from './sqs';

/** One job type to deploy. */
export interface LocalJobType {
  type: string;
  timeoutMs: number;
  /** Overrides the ready queue's visibility (default: 6 × the worker Lambda's timeout). */
  visibilityTimeoutSeconds?: number;
}

/** Options for {@link deployLocal}. */
export interface DeployLocalOptions {
  /** Resource-name prefix, e.g. from `uniquePrefix()`. */
  prefix: string;
  jobTypes: LocalJobType[];
  /** Receives before a message goes to the DLQ. @default MAX_RECEIVE_COUNT (30) */
  maxReceiveCount?: number;
  /** @default 30 */
  retentionDays?: number;
  /** @default 'info' */
  logLevel?: LogLevel;
}

/** URLs and ARNs of one job type's queues. */
export interface LocalQueues {
  url: string;
  arn: string;
  dlqUrl: string;
  dlqArn: string;
}

/** What {@link deployLocal} created. */
export interface LocalDeployment {
  config: PlatformConfig;
  /** `platformConfigToEnv(config)`: the ORRERY_* variables the functions read. */
  env: Record<string, string>;
  queues: Record<string, LocalQueues>;
}

/**
 * Maps the table definition to a DynamoDB CreateTable input: on-demand billing, the
 * partition key, and each GSI with its INCLUDE projection (KEYS_ONLY when `include` is
 * empty). TTL is not part of CreateTable; enable it with UpdateTimeToLive on
 * `definition.ttlAttribute`. The CDK construct maps the same {@link JOB_TABLE} on its own.
 *
 * @example
 * await dynamo.send(new CreateTableCommand(createTableInput('dev-jobs', JOB_TABLE)));
 */
export function createTableInput(name: string, definition: TableDefinition): CreateTableCommandInput {
  const keyAttributes = new Set([definition.partitionKey, definition.sortKey]);
  for (const index of definition.indexes) {
    keyAttributes.add(index.partitionKey).add(index.sortKey);
  }
  for (const attribute of keyAttributes) {
    if (!definition.attributes[attribute])
      throw new Error(`key attribute ${attribute} has no type in the table definition`);
  }
  return {
    TableName: name,
    BillingMode: 'PAY_PER_REQUEST',
    // DynamoDB rejects definitions of attributes that are not keys of the table or an index.
    AttributeDefinitions: Object.entries(definition.attributes)
      .filter(([attribute]) => keyAttributes.has(attribute))
      .map(([AttributeName, AttributeType]) => ({ AttributeName, AttributeType })),
    KeySchema: [
      { AttributeName: definition.partitionKey, KeyType: 'HASH' },
      { AttributeName: definition.sortKey, KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: definition.indexes.map((index) => ({
      IndexName: index.name,
      KeySchema: [
        { AttributeName: index.partitionKey, KeyType: 'HASH' },
        { AttributeName: index.sortKey, KeyType: 'RANGE' },
      ],
      Projection:
        index.include.length > 0
          ? { ProjectionType: 'INCLUDE', NonKeyAttributes: [...index.include] }
          : { ProjectionType: 'KEYS_ONLY' },
    })),
  };
}

/**
 * Creates one deployment in the running emulators, the way the CDK stack would in AWS (and,
 * like a stack update, it is safe to run again with the same prefix): the
 * job table `${prefix}-jobs` (from {@link JOB_TABLE}, with TTL), a ready queue and DLQ per job
 * type (names from `queueNames`, visibility from the type's timeout, 14-day retention,
 * redrive after `maxReceiveCount` receives) and the Scheduler group `${prefix}-jobs`.
 *
 * @example
 * const aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
 * const deployment = await deployLocal(aws, { prefix: uniquePrefix('api'), jobTypes: [{ type: 'echo', timeoutMs: 5_000 }] });
 * Object.assign(process.env, aws.env, deployment.env);
 * // ... later
 * await destroyLocal(aws, deployment);
 */
export async function deployLocal(aws: LocalAwsTarget, options: DeployLocalOptions): Promise<LocalDeployment> {
  const clients = localClients(aws);
  const tableName = `${options.prefix}-jobs`;
  const scheduleGroup = `${options.prefix}-jobs`;
  // fauxqs' S3 (moto's on that target); bucket names are lower case
  const payloadBucket = aws.endpoints.s3 ? `${options.prefix.toLowerCase()}-payloads` : undefined;
  try {
    const table = (async () => {
      await clients.dynamo
        .send(new CreateTableCommand(createTableInput(tableName, JOB_TABLE)))
        .catch(ignore('ResourceInUseException'));
      await waitForActive(clients.dynamo, tableName);
      const ttl = await clients.dynamo.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
      if (ttl.TimeToLiveDescription?.TimeToLiveStatus !== 'ENABLED') {
        await clients.dynamo.send(
          new UpdateTimeToLiveCommand({
            TableName: tableName,
            TimeToLiveSpecification: { AttributeName: JOB_TABLE.ttlAttribute, Enabled: true },
          }),
        );
      }
    })();
    const group = ensureScheduleGroup(clients.scheduler, scheduleGroup);
    const bucket = payloadBucket ? createBucket(aws, payloadBucket) : Promise.resolve();
    const [queueList] = await Promise.all([
      Promise.all(
        options.jobTypes.map(
          async (jobType) => [jobType.type, await createQueues(clients.sqs, options, jobType)] as const,
        ),
      ),
      table,
      group,
      bucket,
    ]);
    const queues = Object.fromEntries(queueList);
    const first = queueList[0]?.[1];
    if (!first) throw new Error('deployLocal needs at least one job type');
    const config: PlatformConfig = {
      tableName,
      // As the stack names them: the functions derive any type's queue from the naming.
      queues: {
        urlBase: first.url.slice(0, first.url.lastIndexOf('/') + 1),
        arnBase: first.arn.slice(0, first.arn.lastIndexOf(':') + 1),
        prefix: options.prefix,
      },
      maxReceiveCount: options.maxReceiveCount ?? MAX_RECEIVE_COUNT,
      routes: Object.fromEntries(
        queueList.map(([type, q]) => [
          type,
          {
            queueUrl: q.url,
            queueArn: q.arn,
            dlqUrl: q.dlqUrl,
            dlqArn: q.dlqArn,
            // as JobWorker gives it: the worker counts the messages it dead-letters
            maxReceiveCount: options.maxReceiveCount ?? MAX_RECEIVE_COUNT,
          },
        ]),
      ),
      scheduleGroup,
      schedulerRoleArn: `arn:aws:iam::${LOCAL_ACCOUNT_ID}:role/${options.prefix}-scheduler`,
      retentionDays: options.retentionDays ?? 30,
      logLevel: options.logLevel ?? 'info',
      ...(payloadBucket ? { payloadBucket } : {}),
    };
    return { config, env: platformConfigToEnv(config), queues };
  } finally {
    clients.destroy();
  }
}

/** Creates the payload bucket (an existing one is kept). */
async function createBucket(aws: LocalAwsTarget, name: string): Promise<void> {
  const s3 = new S3Client({ region: aws.region, endpoint: aws.endpoints.s3, credentials: LOCAL_CREDENTIALS });
  try {
    await s3.send(new CreateBucketCommand({ Bucket: name })).catch(ignore('BucketAlreadyOwnedByYou'));
  } finally {
    s3.destroy();
  }
}

/**
 * Deletes what {@link deployLocal} created (missing resources are ignored). Schedules left in
 * the group are deleted with it, as in Scheduler.
 *
 * @example
 * afterAll(() => destroyLocal(aws, deployment));
 */
export async function destroyLocal(aws: LocalAwsTarget, deployment: LocalDeployment): Promise<void> {
  const clients = localClients(aws);
  const ignoreMissing = ignore(
    'ResourceNotFoundException',
    'QueueDoesNotExist',
    'AWS.SimpleQueueService.NonExistentQueue',
  );
  try {
    await Promise.all([
      clients.dynamo.send(new DeleteTableCommand({ TableName: deployment.config.tableName })).catch(ignoreMissing),
      deleteScheduleGroup(clients.scheduler, deployment.config.scheduleGroup),
      ...Object.values(deployment.queues).flatMap((q) => [
        clients.sqs.send(new DeleteQueueCommand({ QueueUrl: q.url })).catch(ignoreMissing),
        clients.sqs.send(new DeleteQueueCommand({ QueueUrl: q.dlqUrl })).catch(ignoreMissing),
      ]),
    ]);
  } finally {
    clients.destroy();
  }
}

/**
 * Creates the schedule group unless it exists. It asks first (GetScheduleGroup), because an
 * endpoint may answer CreateScheduleGroup of an existing group by replacing it and silently
 * dropping its schedules (moto does); Scheduler itself answers ConflictException, ignored here
 * for a concurrent create.
 */
async function ensureScheduleGroup(scheduler: SchedulerClient, name: string): Promise<void> {
  if (await scheduleGroupExists(scheduler, name)) return;
  await scheduler.send(new CreateScheduleGroupCommand({ Name: name })).catch(ignore('ConflictException'));
}

/**
 * Deletes the schedule group; one that is already gone is fine. It asks first, because an
 * endpoint may answer DeleteScheduleGroup of a missing group with an error other than
 * ResourceNotFoundException (moto: an HTML 500); a delete that fails is checked again the same way.
 */
async function deleteScheduleGroup(scheduler: SchedulerClient, name: string): Promise<void> {
  if (!(await scheduleGroupExists(scheduler, name))) return;
  try {
    await scheduler.send(new DeleteScheduleGroupCommand({ Name: name }));
  } catch (error) {
    if (awsName(error) === 'ResourceNotFoundException' || !(await scheduleGroupExists(scheduler, name))) return;
    throw error;
  }
}

async function scheduleGroupExists(scheduler: SchedulerClient, name: string): Promise<boolean> {
  try {
    await scheduler.send(new GetScheduleGroupCommand({ Name: name }));
    return true;
  } catch (error) {
    if (awsName(error) === 'ResourceNotFoundException') return false;
    throw error;
  }
}

function awsName(error: unknown): string {
  return (error as { name?: string } | null)?.name ?? '';
}

async function createQueues(sqs: SQSClient, options: DeployLocalOptions, jobType: LocalJobType): Promise<LocalQueues> {
  const names = queueNames(options.prefix, jobType.type);
  const retention = String(RETENTION_SECONDS);
  const dlq = await sqs.send(
    new CreateQueueCommand({ QueueName: names.dlq, Attributes: { MessageRetentionPeriod: retention } }),
  );
  const dlqUrl = required(dlq.QueueUrl, 'DLQ url');
  const dlqArn = await queueArn(sqs, dlqUrl);
  const visibility =
    jobType.visibilityTimeoutSeconds ?? visibilityTimeoutSeconds(lambdaTimeoutSeconds(jobType.timeoutMs));
  const ready = await sqs.send(
    new CreateQueueCommand({
      QueueName: names.ready,
      Attributes: {
        VisibilityTimeout: String(visibility),
        MessageRetentionPeriod: retention,
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: dlqArn,
          maxReceiveCount: options.maxReceiveCount ?? MAX_RECEIVE_COUNT,
        }),
      },
    }),
  );
  const url = required(ready.QueueUrl, 'queue url');
  return { url, arn: await queueArn(sqs, url), dlqUrl, dlqArn };
}

async function queueArn(sqs: SQSClient, queueUrl: string): Promise<string> {
  const out = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }));
  return required(out.Attributes?.QueueArn, `QueueArn of ${queueUrl}`);
}

async function waitForActive(dynamo: DynamoDBClient, tableName: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const out = await dynamo.send(new DescribeTableCommand({ TableName: tableName }));
    const indexesReady = (out.Table?.GlobalSecondaryIndexes ?? []).every((gsi) => gsi.IndexStatus === 'ACTIVE');
    if (out.Table?.TableStatus === 'ACTIVE' && indexesReady) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`table ${tableName} did not become ACTIVE`);
}

/** A `.catch` handler that swallows the named AWS errors and rethrows anything else. */
function ignore(...names: string[]) {
  return (error: unknown): void => {
    if (!names.includes((error as { name?: string }).name ?? '')) throw error;
  };
}

function required<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`missing ${what}`);
  return value;
}
