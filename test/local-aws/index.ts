import { SQSClient } from '@aws-sdk/client-sqs';
import type { Clock } from '../../shared/core/clock';
import { LOCAL_CREDENTIALS, type LocalEndpoints } from './clients';
import { type DynamoDbLocal, startDynamoDbLocal } from './dynamodb-local';
import {
  type AwsTargetKind,
  awsTargetFromEnv,
  leaseMsForWriteLatency,
  type MotoServer,
  measureWriteLatency,
  startMotoServer,
  startSerialProxy,
  unavailable,
  type WriteLatency,
} from './moto';
import { assertSupportedNode } from './node-floor';
import { type Deliver, sqsDeliverer, startSchedulerStandIn } from './scheduler-standin';
import { type LocalSqs, startLocalSqs } from './sqs';

export { LOCAL_CREDENTIALS, type LocalAwsTarget, type LocalEndpoints, localClients } from './clients';
export { createTableInput, deployLocal, destroyLocal, type LocalDeployment, type LocalQueues } from './deploy';
export { type DynamoDbLocal, processAlive, startDynamoDbLocal } from './dynamodb-local';
export {
  type FunctionUrlHandler,
  type FunctionUrlServer,
  LOCAL_USER_ARN,
  type LocalCaller,
  startFunctionUrlServer,
} from './function-url';
export { lambdaContext } from './lambda-context';
export { drain, type QueueRunner, runOnce, type SqsLambdaHandler, startQueueRunner } from './lambda-runner';
export { assumedRole, type LocalAccessOptions, localAccess, localRoleId } from './local-access';
export {
  AWS_TARGET_ENV,
  type AwsTargetKind,
  awsTargetFromEnv,
  leaseMsForWriteLatency,
  MOTO_INSTALL_HINT,
  type MotoServer,
  type WriteLatency,
} from './moto';
export { uniquePrefix } from './namespace';
export { type LocalSqs, startLocalSqs } from './sqs';
export { toSqsEvent } from './sqs-event';

/** Options for {@link startLocalAws}. */
export interface StartLocalAwsOptions {
  /** Clock of the Scheduler stand-in (a `ManualClock` lets tests fire schedules on demand). @default systemClock */
  clock?: Clock;
  /** Reuse a running DynamoDB Local (e.g. the global setup's); otherwise one is started and owned. */
  dynamodbEndpoint?: string;
  /** @default 'us-east-1' */
  region?: string;
  /** Let the stand-in fire due schedules by itself (as `npm run dev` wants). @default the stand-in's default */
  autoFire?: boolean;
  /**
   * Wraps the stand-in's delivery to SQS (e.g. to drop, delay or duplicate fires, as a chaos
   * run does). @default delivery as is
   */
  wrapDeliver?: (deliver: Deliver) => Deliver;
  /**
   * Which AWS to run against: `local` (DynamoDB Local, fauxqs, our Scheduler stand-in) or `moto`
   * (one moto server of our own for DynamoDB, SQS and Scheduler; its Scheduler never fires, and
   * there is no stand-in, so `clock`, `autoFire` and `wrapDeliver` do not apply).
   * @default `ORRERY_AWS` (unset: `local`)
   */
  target?: AwsTargetKind;
}

/** The Scheduler stand-in, as returned by `startSchedulerStandIn`. */
export type SchedulerStandIn = Awaited<ReturnType<typeof startSchedulerStandIn>>;

/** A running local AWS: DynamoDB Local, fauxqs (SQS) and the Scheduler stand-in. */
export interface LocalAws {
  /** Which AWS this is (see {@link StartLocalAwsOptions.target}). */
  readonly target: AwsTargetKind;
  readonly region: string;
  readonly endpoints: LocalEndpoints;
  /** `AWS_ENDPOINT_URL_{DYNAMODB,SQS,SCHEDULER,S3}`, `AWS_REGION`, `AWS_DEFAULT_REGION` and dummy credentials. */
  readonly env: Record<string, string>;
  /** Writes {@link env} into `process.env`; returns a function that restores the previous values. */
  applyEnv(): () => void;
  readonly scheduler: SchedulerStandIn;
  readonly sqs: LocalSqs;
  /** The DynamoDB Local this instance started, if it started one (not when reusing an endpoint). */
  readonly dynamodb: DynamoDbLocal | undefined;
  /** On `moto`: its server (our child process). */
  readonly moto?: MotoServer;
  /** On `moto`: conditional-write latency measured at start. */
  readonly writeLatency?: WriteLatency;
  /** Lease workers should use on this target (moto: follows `writeLatency`); undefined: the default. */
  readonly leaseMs?: number;
  /** Stops the stand-in and fauxqs, and the DynamoDB Local if this instance started it. */
  stop(): Promise<void>;
}

/**
 * Starts the local AWS that tests and `npm run dev` run against. Production code reaches it
 * only through the environment (`applyEnv()` or spawning with `env`): plain
 * `new DynamoDBClient({})`, `new SQSClient({})`, `new SchedulerClient({})`.
 *
 * On a Node older than `NODE_FLOOR` (node-floor.ts) it throws `UnsupportedNodeError` before
 * starting any emulator, as importing `orrery-jobs/testing` does.
 *
 * Each call gets its own in-process fauxqs and Scheduler stand-in (cheap, ~10 ms); DynamoDB
 * Local (a JVM, ~1.5 s) is best shared: pass `dynamodbEndpoint` (in vitest,
 * `inject('dynamodbEndpoint')` from the global setup) and use a unique prefix per file.
 *
 * @example
 * const aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint'), clock: new ManualClock() });
 * aws.applyEnv();
 * const deployment = await deployLocal(aws, { prefix: uniquePrefix('my-test'), jobTypes: [{ type: 'echo', timeoutMs: 5_000 }] });
 * // ...
 * await aws.stop();
 */
export async function startLocalAws(options: StartLocalAwsOptions = {}): Promise<LocalAws> {
  const region = options.region ?? 'us-east-1';
  if ((options.target ?? awsTargetFromEnv()) === 'moto') return startMotoAws(region);
  // Before DynamoDB Local starts: on an old Node, fauxqs would fail only after the JVM is up.
  assertSupportedNode();
  const dynamodb = options.dynamodbEndpoint ? undefined : await startDynamoDbLocal();
  const dynamodbEndpoint = options.dynamodbEndpoint ?? dynamodb?.endpoint ?? '';
  let sqs: LocalSqs | undefined;
  let deliveryClient: SQSClient | undefined;
  try {
    sqs = await startLocalSqs({ region });
    deliveryClient = new SQSClient({ region, endpoint: sqs.endpoint, credentials: LOCAL_CREDENTIALS });
    const scheduler = await startSchedulerStandIn({
      deliver: options.wrapDeliver ? options.wrapDeliver(sqsDeliverer(deliveryClient)) : sqsDeliverer(deliveryClient),
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.autoFire !== undefined ? { autoFire: options.autoFire } : {}),
    });
    const endpoints: LocalEndpoints = {
      dynamodb: dynamodbEndpoint,
      sqs: sqs.endpoint,
      scheduler: scheduler.endpoint,
      s3: sqs.endpoint,
    };
    const env = localAwsEnv(endpoints, region);
    const ownedSqs = sqs;
    const ownedClient = deliveryClient;
    return {
      target: 'local',
      region,
      endpoints,
      env,
      applyEnv: () => applyEnv(env),
      scheduler,
      sqs: ownedSqs,
      dynamodb,
      async stop() {
        await scheduler.stop();
        ownedClient.destroy();
        await ownedSqs.stop();
        await dynamodb?.stop();
      },
    };
  } catch (error) {
    deliveryClient?.destroy();
    await sqs?.stop();
    await dynamodb?.stop();
    throw error;
  }
}

/**
 * The moto target: one moto server of our own for DynamoDB, SQS and Scheduler (DynamoDB through
 * a proxy that sends it one request at a time: moto does not serialise conditional writes, see
 * moto.ts), its write latency measured and the lease sized from it. There is no Scheduler
 * stand-in (moto's Scheduler stores schedules and never fires them) and no fauxqs: using
 * either throws.
 */
async function startMotoAws(region: string): Promise<LocalAws> {
  const moto = await startMotoServer();
  let proxy: Awaited<ReturnType<typeof startSerialProxy>> | undefined;
  try {
    proxy = await startSerialProxy(moto.endpoint);
    const dynamodbProxy = proxy;
    const writeLatency = await measureWriteLatency(proxy.endpoint, region);
    const endpoints: LocalEndpoints = {
      dynamodb: proxy.endpoint,
      sqs: moto.endpoint,
      scheduler: moto.endpoint,
      s3: moto.endpoint,
    };
    const env = localAwsEnv(endpoints, region);
    const why = "the moto target has moto's own SQS and a Scheduler that never fires";
    return {
      target: 'moto',
      region,
      endpoints,
      env,
      applyEnv: () => applyEnv(env),
      scheduler: unavailable<SchedulerStandIn>('the Scheduler stand-in', why),
      sqs: unavailable<LocalSqs>('fauxqs', why),
      dynamodb: undefined,
      moto,
      writeLatency,
      leaseMs: leaseMsForWriteLatency(writeLatency),
      async stop() {
        await dynamodbProxy.stop();
        await moto.stop();
      },
    };
  } catch (error) {
    await proxy?.stop();
    await moto.stop();
    throw error;
  }
}

/**
 * The environment that points the AWS SDK at the local emulators.
 *
 * @example
 * spawn('node', ['dist/api.js'], { env: { ...process.env, ...localAwsEnv(aws.endpoints, 'us-east-1') } });
 */
export function localAwsEnv(endpoints: LocalEndpoints, region: string): Record<string, string> {
  return {
    AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
    AWS_ENDPOINT_URL_SQS: endpoints.sqs,
    AWS_ENDPOINT_URL_SCHEDULER: endpoints.scheduler,
    ...(endpoints.s3 ? { AWS_ENDPOINT_URL_S3: endpoints.s3 } : {}),
    AWS_REGION: region,
    AWS_DEFAULT_REGION: region,
    AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
  };
}

/** Sets `env` in `process.env` (dropping a stray `AWS_SESSION_TOKEN`/`AWS_PROFILE`); returns an undo function. */
function applyEnv(env: Record<string, string>): () => void {
  const names = [...Object.keys(env), 'AWS_SESSION_TOKEN', 'AWS_PROFILE'];
  const previous = new Map(names.map((name) => [name, process.env[name]]));
  delete process.env.AWS_SESSION_TOKEN;
  delete process.env.AWS_PROFILE;
  Object.assign(process.env, env);
  return () => {
    for (const [name, value] of previous) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
}
