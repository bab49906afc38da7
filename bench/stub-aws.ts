/**
 * Real DynamoDB and SQS SDK clients whose HTTP transport is replaced by canned answers: every
 * call still goes through our adapters, marshalling, the SDK's middleware, serialisation,
 * SigV4 signing and deserialisation, but never leaves the process. Measures the CPU a Lambda
 * spends on AWS calls, without an emulator's CPU in the same process.
 */
import { createHash, randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { toItem } from '../shared/aws/job-item';
import type { Job } from '../shared/core/job';

interface StubRequest {
  headers: Record<string, string>;
  body?: unknown;
}

const JSON_HEADERS = { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'bench' };
const encoder = new TextEncoder();
const credentials = { accessKeyId: 'AKIDBENCH', secretAccessKey: 'bench-secret' };

function answer(body: string) {
  return { response: { statusCode: 200, headers: { ...JSON_HEADERS }, body: encoder.encode(body) } };
}

const decoder = new TextDecoder();

function bodyText(request: StubRequest): string {
  return typeof request.body === 'string' ? request.body : decoder.decode(request.body as Uint8Array);
}

function target(request: StubRequest): string {
  return request.headers['x-amz-target'] ?? request.headers['X-Amz-Target'] ?? '';
}

/**
 * DynamoDB whose UpdateItem with `ReturnValues: ALL_NEW` (the claim) answers `claimed` as the
 * stored item, and every other call answers `{}` (success). The claim answer is built once.
 */
export function stubDynamo(claimed: Job): DynamoDBClient {
  const claimBody = JSON.stringify({ Attributes: toItem(claimed) });
  return new DynamoDBClient({
    region: 'us-east-1',
    credentials,
    requestHandler: {
      handle: async (request: StubRequest) => {
        const isClaim = target(request).endsWith('UpdateItem') && bodyText(request).includes('"ALL_NEW"');
        return answer(isClaim ? claimBody : '{}');
      },
    } as never,
  });
}

/** SQS that accepts every call; SendMessage answers with the MD5 the SDK checks. */
export function stubSqs(): SQSClient {
  return new SQSClient({
    region: 'us-east-1',
    credentials,
    requestHandler: {
      handle: async (request: StubRequest) => {
        if (!target(request).endsWith('SendMessage')) return answer('{}');
        const { MessageBody } = JSON.parse(bodyText(request)) as { MessageBody: string };
        const md5 = createHash('md5').update(MessageBody).digest('hex');
        return answer(JSON.stringify({ MessageId: randomUUID(), MD5OfMessageBody: md5 }));
      },
    } as never,
  });
}
