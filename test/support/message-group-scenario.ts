/**
 * SQS message groups (fair queues) against a local AWS, with no mock: the job-queue contract on
 * SqsJobQueue, and the API's enqueue of a keyed job type, alone and batched, through the
 * production clients (reached by `AWS_ENDPOINT_URL_*` only). What goes over the wire is read from
 * the SQS client's own requests, and what comes back from a ReceiveMessage asking for the
 * `MessageGroupId` attribute. Run on fauxqs (test/integration/message-groups.test.ts), which
 * accepts a group on a standard queue and drops it, and on moto server
 * (test/moto/message-groups.test.ts), which keeps it and returns it; neither reorders by group.
 */
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteQueueCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type AwsClients, createAwsClients } from '../../shared/aws/clients';
import { SqsJobQueue } from '../../shared/aws/sqs-job-queue';
import type { JobMessage } from '../../shared/core/job';
import { defineJobType } from '../../shared/core/job-type';
import { defineJob } from '../../shared/runtime/define-job';
import { jobQueueContract, type ReceivedMessage } from '../contract/job-queue.contract';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';

const payload = z.object({ tenant: z.string() });
const tenantSync = defineJob(
  defineJobType({ type: 'tenant-sync', payload, concurrency: [{ limit: 2, key: (p) => p.tenant }] }),
  async () => undefined,
);
const quietSync = defineJob(
  defineJobType({
    type: 'quiet-sync',
    payload,
    concurrency: [{ limit: 2, key: (p) => p.tenant }],
    sqsFairQueue: false,
  }),
  async () => undefined,
);

/** The SendMessage and SendMessageBatch requests a client made, as JSON on the wire. */
interface Sent {
  action: string;
  body: { MessageGroupId?: string; Entries?: { MessageBody: string; MessageGroupId?: string }[] };
}

/** Records the body of every SQS request `client` sends (after serialisation: what SQS receives). */
function recordRequests(client: SQSClient): Sent[] {
  const sent: Sent[] = [];
  client.middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { headers?: Record<string, string>; body?: unknown };
      const action = (request.headers?.['x-amz-target'] ?? '').replace('AmazonSQS.', '');
      const { body } = request;
      const text = typeof body === 'string' ? body : body instanceof Uint8Array ? new TextDecoder().decode(body) : '';
      if (action.startsWith('SendMessage')) sent.push({ action, body: JSON.parse(text || '{}') as Sent['body'] });
      return next(args);
    },
    { step: 'finalizeRequest', name: 'recordSqsRequests' },
  );
  return sent;
}

/** Receives `count` messages of `queueUrl` (or what came within ~10 s), asking for their group, and deletes them. */
async function receiveAll(sqs: SQSClient, queueUrl: string, count: number): Promise<ReceivedMessage[]> {
  const got: ReceivedMessage[] = [];
  for (let tries = 0; got.length < count && tries < 10; tries++) {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        MessageSystemAttributeNames: ['MessageGroupId'],
      }),
    );
    const messages = out.Messages ?? [];
    for (const m of messages) {
      got.push({ message: JSON.parse(m.Body ?? '{}') as JobMessage, groupId: m.Attributes?.MessageGroupId });
    }
    if (messages.length > 0) {
      await sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '' })),
        }),
      );
    }
  }
  return got;
}

/** The scenario, on the local AWS `startLocalAws` starts with `options` (its target from `ORRERY_AWS`). */
export function messageGroupScenario(options: { dynamodbEndpoint?: string } = {}): void {
  let aws: LocalAws;
  let platform: LocalPlatform;
  let clients: AwsClients;
  let restoreEnv: () => void;
  let sent: Sent[];
  const scratch: string[] = [];

  beforeAll(async () => {
    aws = await startLocalAws({ ...options, autoFire: false });
    restoreEnv = aws.applyEnv();
    // built as the functions build theirs, from the environment alone
    clients = createAwsClients();
    sent = recordRequests(clients.sqs);
    platform = await startLocalPlatform({
      aws,
      prefix: uniquePrefix('groups'),
      jobs: [tenantSync, quietSync],
      clients,
      runWorkers: false,
    });
  });

  afterAll(async () => {
    for (const url of scratch) await clients?.sqs.send(new DeleteQueueCommand({ QueueUrl: url }));
    await platform?.stop();
    for (const client of Object.values(clients ?? {})) client.destroy();
    restoreEnv?.();
    await aws?.stop();
  });

  /** What the target does with a standard-queue message's group (measured: fauxqs 2.4.1 drops it, moto 5.2.1 keeps it). */
  const groups = () => (aws.target === 'moto' ? 'kept' : 'dropped');

  describe('job queue contract: SqsJobQueue', () => {
    jobQueueContract(async () => ({
      queue: new SqsJobQueue(platform.clients.sqs),
      newQueue: async () => {
        const name = uniquePrefix('contract-q');
        const out = await platform.clients.sqs.send(new CreateQueueCommand({ QueueName: name }));
        if (!out.QueueUrl) throw new Error(`no URL for queue ${name}`);
        scratch.push(out.QueueUrl);
        return out.QueueUrl;
      },
      receive: (url, count) => receiveAll(platform.clients.sqs, url, count),
      groups: groups(),
    }));
  });

  describe("the API's enqueue of a keyed type", () => {
    const post = async (path: string, body: unknown) => {
      const response = await fetch(`${platform.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return response.status;
    };
    const queueOf = (type: string) => platform.deployment.queues[type]?.url ?? '';

    it('sends each message in its group, alone and batched, and the queue accepts them all', async () => {
      const from = sent.length;
      expect(await post('/jobs', { id: 'one', type: 'tenant-sync', payload: { tenant: 'acme' } })).toBe(201);
      const jobs = [
        { id: 'b1', type: 'tenant-sync', payload: { tenant: 'globex' } },
        { id: 'b2', type: 'tenant-sync', payload: { tenant: 'Zürich AG' } },
        { id: 'b3', type: 'quiet-sync', payload: { tenant: 'acme' } },
      ];
      expect(await post('/jobs/batch', { jobs })).toBe(200);

      // on the wire: MessageGroupId on the SendMessage and on the batch entries of the keyed type
      const wire = sent.slice(from);
      const single = wire.find((s) => s.action === 'SendMessage');
      expect(single?.body.MessageGroupId).toBe('tenant-sync:acme');
      const entries = wire.filter((s) => s.action === 'SendMessageBatch').flatMap((s) => s.body.Entries ?? []);
      const groupOf = Object.fromEntries(
        entries.map((e) => [(JSON.parse(e.MessageBody) as JobMessage).id, e.MessageGroupId]),
      );
      const zurich = expect.stringMatching(/^tenant-sync#[\w-]{43}$/);
      expect(groupOf).toEqual({ b1: 'tenant-sync:globex', b2: zurich, b3: undefined });

      // accepted: every message is in its queue, with its group where the target keeps it
      const received = await receiveAll(platform.clients.sqs, queueOf('tenant-sync'), 3);
      const back = Object.fromEntries(received.map((m) => [m.message.id, m.groupId]));
      expect(back).toEqual(
        groups() === 'kept'
          ? { one: 'tenant-sync:acme', b1: 'tenant-sync:globex', b2: zurich }
          : { one: undefined, b1: undefined, b2: undefined },
      );
      const quiet = await receiveAll(platform.clients.sqs, queueOf('quiet-sync'), 1);
      expect(quiet.map((m) => [m.message.id, m.groupId])).toEqual([['b3', undefined]]);
    });
  });
}
