import { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { SqsJobQueue } from '../../shared/aws/sqs-job-queue';
import type { QueueEntry } from '../../shared/core/ports';
import { SEND_BATCH_MAX_BYTES, sendBatchGroups } from '../../shared/core/ports';
import { DependencyError, ThrottledError } from '../../shared/errors';

/**
 * SqsJobQueue.sendBatch with the real SDK serialising requests and parsing canned HTTP answers:
 * how entries are grouped into SendMessageBatch calls and how per-entry failures are reported.
 */

interface BatchRequest {
  QueueUrl: string;
  Entries: { Id: string; MessageBody: string; DelaySeconds?: number }[];
}

type Answer = (request: BatchRequest, call: number) => { status: number; body: unknown; type?: string };

function clientAnswering(answer: Answer): { client: SQSClient; requests: BatchRequest[] } {
  const requests: BatchRequest[] = [];
  const client = new SQSClient({
    region: 'us-east-1',
    endpoint: 'http://sqs.invalid',
    credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    maxAttempts: 1,
    // the canned answers carry no real MD5 of the bodies
    md5: false,
    requestHandler: {
      async handle(request: { headers: Record<string, string>; body: string | Uint8Array }) {
        const action = (request.headers['x-amz-target'] ?? '').replace('AmazonSQS.', '');
        if (action !== 'SendMessageBatch') throw new Error(`unexpected ${action}`);
        const text = typeof request.body === 'string' ? request.body : new TextDecoder().decode(request.body);
        const parsed = JSON.parse(text) as BatchRequest;
        requests.push(parsed);
        const out = answer(parsed, requests.length);
        return {
          response: {
            statusCode: out.status,
            headers: {
              'content-type': 'application/x-amz-json-1.0',
              ...(out.type ? { 'x-amzn-query-error': `${out.type};Sender` } : {}),
            },
            body: new TextEncoder().encode(JSON.stringify(out.body)),
          },
        };
      },
    } as never,
  });
  return { client, requests };
}

const ok = (entry: { Id: string }) => ({ Id: entry.Id, MessageId: `mid-${entry.Id}`, MD5OfMessageBody: 'x' });
const entries = (n: number): QueueEntry[] =>
  Array.from({ length: n }, (_, i) => ({ message: { v: 1, id: `job-${i}`, type: 'echo' } }));
const URL = 'https://sqs.us-east-1.amazonaws.com/123456789012/orrery-echo';

describe('sendBatchGroups', () => {
  it('groups at most 10 entries and 1 MiB of bodies per call, in order', () => {
    expect(sendBatchGroups(Array.from({ length: 25 }, () => 'x')).map((g) => g.length)).toEqual([10, 10, 5]);
    const big = 'y'.repeat(SEND_BATCH_MAX_BYTES / 2);
    expect(sendBatchGroups([big, big, big, 'z'])).toEqual([
      [0, 1],
      [2, 3],
    ]);
    expect(sendBatchGroups([])).toEqual([]);
  });
});

describe('SqsJobQueue.sendBatch', () => {
  it('sends 100 messages in 10 SendMessageBatch calls, with their delays', async () => {
    const { client, requests } = clientAnswering((request) => ({
      status: 200,
      body: { Successful: request.Entries.map(ok), Failed: [] },
    }));
    const batch = entries(100).map((e, i) => (i === 3 ? { ...e, delaySeconds: 30 } : e));
    const outcomes = await new SqsJobQueue(client).sendBatch(URL, batch);
    expect(outcomes.every((o) => o.sent)).toBe(true);
    expect(requests.map((r) => r.Entries.length)).toEqual(Array(10).fill(10));
    const bodies = requests.flatMap((r) => r.Entries.map((e) => JSON.parse(e.MessageBody).id));
    expect(bodies.sort()).toEqual(batch.map((e) => e.message.id).sort());
    expect(requests.flatMap((r) => r.Entries).find((e) => e.DelaySeconds !== undefined)?.DelaySeconds).toBe(30);
    client.destroy();
  });

  it('sends a failed entry SQS did not blame on the sender once more, and reports what still fails', async () => {
    const { client, requests } = clientAnswering((request, call) => {
      if (call === 1) {
        const [first, second, ...rest] = request.Entries;
        return {
          status: 200,
          body: {
            Successful: rest.map(ok),
            Failed: [
              { Id: first?.Id, SenderFault: false, Code: 'InternalError', Message: 'try again' },
              { Id: second?.Id, SenderFault: true, Code: 'InvalidMessageContents', Message: 'bad' },
            ],
          },
        };
      }
      return { status: 200, body: { Successful: request.Entries.map(ok), Failed: [] } };
    });
    const outcomes = await new SqsJobQueue(client).sendBatch(URL, entries(4));
    expect(requests.map((r) => r.Entries.map((e) => e.Id))).toEqual([['m0', 'm1', 'm2', 'm3'], ['m0']]);
    expect(outcomes.map((o) => o.sent)).toEqual([true, false, true, true]);
    const failed = outcomes[1];
    expect(failed?.sent === false && failed.error).toBeInstanceOf(DependencyError);
    expect(failed?.sent === false && failed.error.message).toMatch(/job-1.*InvalidMessageContents/);
    client.destroy();
  });

  it('reports every entry of a call that failed as a whole, and sends the other calls', async () => {
    const { client } = clientAnswering((request, call) =>
      call === 1
        ? { status: 400, type: 'ThrottlingException', body: { __type: 'ThrottlingException', message: 'slow down' } }
        : { status: 200, body: { Successful: request.Entries.map(ok), Failed: [] } },
    );
    const outcomes = await new SqsJobQueue(client).sendBatch(URL, entries(15));
    const failed = outcomes.filter((o) => !o.sent);
    expect(failed).toHaveLength(10);
    for (const o of failed) expect(o.sent === false && o.error).toBeInstanceOf(ThrottledError);
    expect(outcomes.filter((o) => o.sent)).toHaveLength(5);
    client.destroy();
  });

  it('never counts an entry SQS answered for neither way as sent', async () => {
    const { client } = clientAnswering((request) => ({
      status: 200,
      body: { Successful: request.Entries.slice(1).map(ok), Failed: [] },
    }));
    const outcomes = await new SqsJobQueue(client).sendBatch(URL, entries(3));
    expect(outcomes.map((o) => o.sent)).toEqual([false, true, true]);
    client.destroy();
  });
});
