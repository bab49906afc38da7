/**
 * What the bench feeds the platform: Function URL events shaped as Lambda delivers them, and a
 * no-op job type for the throughput and overhead runs.
 */
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { z } from 'zod';
import type { Job } from '../shared/core/job';
import { defineJobType } from '../shared/core/job-type';
import { defineJob } from '../shared/runtime/define-job';

/** `noop`: an empty payload, no result. Its handler does nothing, so everything measured is ours. */
export const noopJob = defineJobType({ type: 'noop', payload: z.object({}).strict(), timeoutMs: 10_000 });
export const noop = defineJob(noopJob, async () => undefined);

/** A payload-format-2.0 event, as a Function URL with `AWS_IAM` auth hands it to the API Lambda. */
export function functionUrlEvent(method: string, path: string, body?: unknown): APIGatewayProxyEventV2 {
  const now = new Date();
  const text = body === undefined ? undefined : JSON.stringify(body);
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: '',
    headers: {
      'content-type': 'application/json',
      host: 'abcdefghijklmnopqrstuvwxyz012345.lambda-url.us-east-1.on.aws',
      'user-agent': 'orrery-bench',
      'x-amz-date': `${now.toISOString().replace(/[-:]/g, '').slice(0, 15)}Z`,
      'x-forwarded-for': '127.0.0.1',
      'x-forwarded-proto': 'https',
      'x-forwarded-port': '443',
      'x-amzn-trace-id': `Root=1-${Math.floor(now.getTime() / 1000).toString(16)}-${randomUUID().replace(/-/g, '').slice(0, 24)}`,
      ...(text === undefined ? {} : { 'content-length': String(Buffer.byteLength(text)) }),
    },
    requestContext: {
      accountId: '000000000000',
      apiId: 'abcdefghijklmnopqrstuvwxyz012345',
      domainName: 'abcdefghijklmnopqrstuvwxyz012345.lambda-url.us-east-1.on.aws',
      domainPrefix: 'abcdefghijklmnopqrstuvwxyz012345',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'orrery-bench' },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    ...(text === undefined ? {} : { body: text }),
    isBase64Encoded: false,
  };
}

/** The body of an API response, parsed. */
export function responseJson<T>(response: { body?: string | undefined }): T {
  return JSON.parse(response.body ?? 'null') as T;
}

/** A queued `noop` job with no attempt yet, as the API would write it. */
export function queuedJob(id: string, now: number): Job {
  const iso = new Date(now).toISOString();
  return {
    id,
    type: 'noop',
    state: 'queued',
    payload: {},
    payloadHash: 'bench',
    attempts: 0,
    maxAttempts: 3,
    createdAt: iso,
    updatedAt: iso,
    runAt: iso,
    leaseToken: 0,
    errors: [],
  };
}
