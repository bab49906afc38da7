import { readFileSync } from 'node:fs';
import { Sha256 } from '@aws-crypto/sha256-js';
import { DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { ListSchedulesCommand, SchedulerClient } from '@aws-sdk/client-scheduler';
import { GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { inject } from 'vitest';
import { catalog } from '../../functions/jobs/catalog';
import { echo } from '../../functions/jobs/echo';
import { flaky } from '../../functions/jobs/flaky';
import { sleep } from '../../functions/jobs/sleep';
import { queueNames } from '../../shared/core/queue-settings';
import { createLogger } from '../../shared/logger';
import { type AwsTargetKind, awsTargetFromEnv, startLocalAws } from '../local-aws/index';
import { startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';
import { ShiftedClock } from '../support/scheduling-clock';

/** What the e2e suite talks to: the same tests run against local AWS or a deployed stack. */
export interface E2ETarget {
  kind: 'local' | 'deployed';
  /** For a local target: which AWS the local platform runs on (`ORRERY_AWS`: our emulators or moto server). */
  aws?: AwsTargetKind;
  /**
   * Sends a request to the API (signed with SigV4 when deployed). A string or `Uint8Array` body
   * is sent as is (raw bytes, e.g. invalid UTF-8); anything else as JSON.
   */
  request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
  /** Sends a raw message body straight to a job type's dead-letter queue (with the SDK). */
  sendToDlq(type: string, body: string): Promise<void>;
  /** Approximate message counts of a job type's ready queue. */
  queueDepth(type: string): Promise<{ visible: number; inFlight: number; delayed: number }>;
  /** Counts of what the platform has written: table items, messages, schedules. */
  footprint(): Promise<{ items: number; messages: number; schedules: number }>;
  /** Names of the one-time job schedules that exist now. */
  scheduleNames(): Promise<string[]>;
  /** Moves the Scheduler's clock forward and fires what is due (local with our Scheduler stand-in only; not on moto). */
  advanceSchedulerClock?: (ms: number) => Promise<void>;
  stop(): Promise<void>;
}

interface StackResources {
  url: string;
  region: string;
  tableName: string;
  scheduleGroup: string;
  queueUrls: string[];
  /** Ready-queue and DLQ URLs per job type, keyed by the type without hyphens (as stack output ids spell it). */
  readyUrls: Record<string, string>;
  dlqUrls: Record<string, string>;
}

/** A request body as fetch sends it: strings and bytes as they are, anything else as JSON. */
function bodyText(body: unknown): string | Uint8Array | undefined {
  if (body === undefined) return undefined;
  return typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body);
}

async function footprintOf(
  resources: StackResources,
  clients: { dynamo: DynamoDBClient; sqs: SQSClient; scheduler: SchedulerClient },
) {
  const scan = await clients.dynamo.send(new ScanCommand({ TableName: resources.tableName, Select: 'COUNT' }));
  let messages = 0;
  for (const queueUrl of resources.queueUrls) {
    const out = await clients.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesNotVisible',
          'ApproximateNumberOfMessagesDelayed',
        ],
      }),
    );
    const a = out.Attributes ?? {};
    messages +=
      Number(a.ApproximateNumberOfMessages ?? 0) +
      Number(a.ApproximateNumberOfMessagesNotVisible ?? 0) +
      Number(a.ApproximateNumberOfMessagesDelayed ?? 0);
  }
  const schedules = await clients.scheduler.send(new ListSchedulesCommand({ GroupName: resources.scheduleGroup }));
  return { items: scan.Count ?? 0, messages, schedules: schedules.Schedules?.length ?? 0 };
}

async function queueDepth(resources: StackResources, sqs: SQSClient, type: string) {
  const queueUrl = resources.readyUrls[type.replace(/-/g, '')];
  if (!queueUrl) throw new Error(`no ready queue for job type ${type}`);
  const out = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: [
        'ApproximateNumberOfMessages',
        'ApproximateNumberOfMessagesNotVisible',
        'ApproximateNumberOfMessagesDelayed',
      ],
    }),
  );
  const a = out.Attributes ?? {};
  return {
    visible: Number(a.ApproximateNumberOfMessages ?? 0),
    inFlight: Number(a.ApproximateNumberOfMessagesNotVisible ?? 0),
    delayed: Number(a.ApproximateNumberOfMessagesDelayed ?? 0),
  };
}

async function sendToDlq(resources: StackResources, sqs: SQSClient, type: string, body: string): Promise<void> {
  const queueUrl = resources.dlqUrls[type.replace(/-/g, '')];
  if (!queueUrl) throw new Error(`no DLQ for job type ${type}`);
  await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
}

async function scheduleNamesOf(resources: StackResources, scheduler: SchedulerClient): Promise<string[]> {
  const out = await scheduler.send(new ListSchedulesCommand({ GroupName: resources.scheduleGroup }));
  return (out.Schedules ?? []).map((s) => s.Name ?? '');
}

/**
 * True when the e2e suite runs locally on moto server (`ORRERY_AWS=moto`, `npm run test:moto`)
 * instead of our own emulators: moto's Scheduler stores schedules but never fires them, and
 * there is no Scheduler stand-in whose clock a test could move.
 */
export const onMoto = process.env.ORRERY_E2E_OUTPUTS === undefined && awsTargetFromEnv() === 'moto';

/**
 * Why a test that drives the Scheduler stand-in (moves its clock, waits for it to fire) is
 * skipped on moto, and only there. The same paths without firing (the supervisor alone) are
 * tested on moto by test/moto/supervisor-only.test.ts.
 */
export const NEEDS_SCHEDULER_STANDIN =
  "drives the Scheduler stand-in's clock and firing; moto's Scheduler never fires (supervisor-only runs: test/moto/)";

/**
 * Why a flow-control test is skipped on moto: concurrency slots rely on DynamoDB serialising
 * conditional writes to one item, which moto does not (docs/local-development.md, "The moto target").
 */
export const NEEDS_SERIALISED_WRITES =
  'flow control needs conditional writes to one item serialised; moto does not serialise them';

/** A flow-control test's title: on moto it carries the reason it is skipped. */
export function flowTest(title: string): string {
  return onMoto ? `${title} [skipped on moto: ${NEEDS_SERIALISED_WRITES}]` : title;
}

/**
 * The title of a test that needs the Scheduler stand-in: on moto it carries the reason it is
 * skipped, so the report says why. Use with `it.skipIf(onMoto)(standInTest('...'), ...)`.
 */
export function standInTest(title: string): string {
  return onMoto ? `${title} [skipped on moto: ${NEEDS_SCHEDULER_STANDIN}]` : title;
}

/**
 * Local target: fresh local AWS and platform for this test file. Scheduler, API and workers share
 * one clock that runs in real time and jumps when a test advances it: a far-future job's schedule
 * fires a minute before runAt, and the worker must agree that runAt has come. With
 * `ORRERY_AWS=moto` the same platform runs on a moto server of its own (no stand-in; workers'
 * lease sized from moto's measured write latency, see test/local-aws/moto.ts).
 */
async function localTarget(): Promise<E2ETarget> {
  const schedulerClock = new ShiftedClock();
  const aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint'), clock: schedulerClock });
  const platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('e2e'),
    jobs: [echo, flaky, sleep],
    logger: createLogger({ level: 'silent' }),
    clock: schedulerClock,
  });
  const resources: StackResources = {
    url: platform.url,
    region: aws.region,
    tableName: platform.config.tableName,
    scheduleGroup: platform.config.scheduleGroup,
    queueUrls: Object.values(platform.deployment.queues).map((q) => q.url),
    readyUrls: Object.fromEntries(
      Object.entries(platform.deployment.queues).map(([type, q]) => [type.replace(/-/g, ''), q.url]),
    ),
    dlqUrls: Object.fromEntries(
      Object.entries(platform.deployment.queues).map(([type, q]) => [type.replace(/-/g, ''), q.dlqUrl]),
    ),
  };
  return {
    kind: 'local',
    aws: aws.target,
    request: (method, path, body, headers = {}) =>
      fetch(`${platform.url}${path}`, {
        method,
        headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
        ...(body === undefined ? {} : { body: bodyText(body) }),
      }),
    sendToDlq: (type, body) => sendToDlq(resources, platform.clients.sqs, type, body),
    queueDepth: (type) => queueDepth(resources, platform.clients.sqs, type),
    footprint: () => footprintOf(resources, platform.clients),
    scheduleNames: () => scheduleNamesOf(resources, platform.clients.scheduler),
    // moto has no stand-in to fire: there, only the supervisor brings delayed work in.
    ...(aws.target === 'local'
      ? {
          advanceSchedulerClock: async (ms: number) => {
            schedulerClock.jumpTo(Date.now() + ms);
            await aws.scheduler.fireDue();
          },
        }
      : {}),
    async stop() {
      await platform.stop();
      await aws.stop();
    },
  };
}

/**
 * Deployed target: `ORRERY_E2E_OUTPUTS` names a `cdk deploy --outputs-file` JSON (LocalStack or
 * a real account). Requests are signed with SigV4 from the default credential chain.
 */
async function deployedTarget(outputsPath: string): Promise<E2ETarget> {
  const outputs = JSON.parse(readFileSync(outputsPath, 'utf8')) as Record<string, Record<string, string>>;
  const stack = Object.values(outputs)[0] ?? {};
  const need = (key: string) => {
    const value = stack[key];
    if (!value) throw new Error(`${outputsPath} has no output ${key}`);
    return value;
  };
  const region = process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1';
  const resources: StackResources = {
    url: need('ApiUrl').replace(/\/$/, ''),
    region,
    tableName: need('TableName'),
    scheduleGroup: need('ScheduleGroupName'),
    queueUrls: [],
    // Keys are the type without hyphens, as the local target's.
    readyUrls: {},
    dlqUrls: {},
  };
  // Queue URLs are <QueueUrlBase><QueueNamePrefix>_ready_<type> and _dlq_<type>.
  const base = need('QueueUrlBase');
  const prefix = need('QueueNamePrefix');
  for (const type of catalog.map((spec) => spec.type)) {
    const names = queueNames(prefix, type);
    resources.queueUrls.push(`${base}${names.ready}`);
    resources.readyUrls[type.replace(/-/g, '')] = `${base}${names.ready}`;
    resources.dlqUrls[type.replace(/-/g, '')] = `${base}${names.dlq}`;
  }
  const clients = { dynamo: new DynamoDBClient({}), sqs: new SQSClient({}), scheduler: new SchedulerClient({}) };
  const signer = new SignatureV4({ service: 'lambda', region, credentials: defaultProvider(), sha256: Sha256 });
  return {
    kind: 'deployed',
    async request(method, path, body, headers = {}) {
      const url = new URL(`${resources.url}${path}`);
      const text = bodyText(body);
      const signed = await signer.sign({
        method,
        protocol: url.protocol,
        hostname: url.hostname,
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: { host: url.host, ...(text === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        ...(text === undefined ? {} : { body: text }),
      });
      return fetch(url, {
        method,
        headers: signed.headers as Record<string, string>,
        ...(text === undefined ? {} : { body: text }),
      });
    },
    footprint: () => footprintOf(resources, clients),
    scheduleNames: () => scheduleNamesOf(resources, clients.scheduler),
    sendToDlq: (type, body) => sendToDlq(resources, clients.sqs, type, body),
    queueDepth: (type) => queueDepth(resources, clients.sqs, type),
    async stop() {
      clients.dynamo.destroy();
      clients.sqs.destroy();
      clients.scheduler.destroy();
    },
  };
}

export async function startTarget(): Promise<E2ETarget> {
  const outputs = process.env.ORRERY_E2E_OUTPUTS;
  return outputs ? deployedTarget(outputs) : localTarget();
}
