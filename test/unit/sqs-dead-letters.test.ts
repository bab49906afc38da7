import { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { isUnimplementedAnswer, SqsDeadLetterQueues } from '../../shared/aws/sqs-dead-letters';
import { ConflictError, DependencyError, ThrottledError } from '../../shared/errors';

/**
 * How redrive decides "this endpoint cannot move messages" (and falls back to receive + send +
 * delete), with the real SDK parsing canned HTTP answers: no endpoint is involved.
 */

interface Canned {
  status: number;
  headers?: Record<string, string>;
  body: string;
}

/** The moto 5.2.1 answer to ListMessageMoveTasks / StartMessageMoveTask (measured): Werkzeug's HTML 500 page. */
const MOTO_HTML_500: Canned = {
  status: 500,
  headers: { 'content-type': 'text/html; charset=utf-8' },
  body: '<!doctype html>\n<html lang=en>\n<title>500 Internal Server Error</title>\n<h1>Internal Server Error</h1>',
};

function jsonError(status: number, type: string, message = `${type} message`): Canned {
  return {
    status,
    headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-query-error': `${type};Sender` },
    body: JSON.stringify({ __type: `com.amazonaws.sqs#${type}`, message }),
  };
}

const OK_LIST: Canned = {
  status: 200,
  headers: { 'content-type': 'application/x-amz-json-1.0' },
  body: JSON.stringify({ Results: [] }),
};
const OK_START: Canned = {
  status: 200,
  headers: { 'content-type': 'application/x-amz-json-1.0' },
  body: JSON.stringify({ TaskHandle: 'handle-1' }),
};

/** An SDK client whose HTTP handler answers each action (`AmazonSQS.<Action>`) with a canned answer. */
function clientAnswering(answers: Record<string, Canned>): { client: SQSClient; calls: string[] } {
  const calls: string[] = [];
  const client = new SQSClient({
    region: 'us-east-1',
    endpoint: 'http://sqs.invalid',
    credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    maxAttempts: 1,
    requestHandler: {
      async handle(request: { headers: Record<string, string> }) {
        const action = (request.headers['x-amz-target'] ?? '').replace('AmazonSQS.', '');
        calls.push(action);
        const answer = answers[action];
        if (!answer) throw new Error(`no canned answer for ${action}`);
        return {
          response: {
            statusCode: answer.status,
            headers: answer.headers ?? {},
            body: new TextEncoder().encode(answer.body),
          },
        };
      },
    } as never,
  });
  return { client, calls };
}

const ARNS = {
  dlqArn: 'arn:aws:sqs:us-east-1:123456789012:p-echo-dlq',
  destinationArn: 'arn:aws:sqs:us-east-1:123456789012:p-echo',
};

async function startMove(answers: Record<string, Canned>) {
  const { client, calls } = clientAnswering(answers);
  try {
    return { result: await new SqsDeadLetterQueues(client).startMove(ARNS), calls };
  } catch (error) {
    return { error, calls };
  } finally {
    client.destroy();
  }
}

describe('SqsDeadLetterQueues.startMove: endpoints that cannot move messages fall back', () => {
  it('moto: an HTML 500 to ListMessageMoveTasks (an SDK deserialization error) is unsupported', async () => {
    const { result, calls } = await startMove({ ListMessageMoveTasks: MOTO_HTML_500 });
    expect(result).toEqual({ kind: 'unsupported' });
    expect(calls).toEqual(['ListMessageMoveTasks']);
  });

  it('an endpoint that lists tasks but answers StartMessageMoveTask with an HTML 500 is unsupported too', async () => {
    const { result, calls } = await startMove({ ListMessageMoveTasks: OK_LIST, StartMessageMoveTask: MOTO_HTML_500 });
    expect(result).toEqual({ kind: 'unsupported' });
    expect(calls).toEqual(['ListMessageMoveTasks', 'StartMessageMoveTask']);
  });

  it.each([
    ['InvalidAction (fauxqs)', jsonError(400, 'InvalidAction')],
    ['UnknownOperationException', jsonError(400, 'UnknownOperationException')],
    ['NotImplemented at HTTP 500', jsonError(500, 'NotImplemented')],
    ['NotImplementedException', jsonError(400, 'NotImplementedException')],
    ['any answer with HTTP 501', { status: 501, headers: { 'content-type': 'text/plain' }, body: 'Not Implemented' }],
  ])('%s is unsupported', async (_label, answer) => {
    expect((await startMove({ ListMessageMoveTasks: answer })).result).toEqual({ kind: 'unsupported' });
  });

  it('starts a task where SQS can', async () => {
    const { result } = await startMove({ ListMessageMoveTasks: OK_LIST, StartMessageMoveTask: OK_START });
    expect(result).toEqual({ kind: 'started', taskHandle: 'handle-1' });
  });
});

describe('SqsDeadLetterQueues.startMove: real failures keep their meaning and name the failed call', () => {
  it('throttling of ListMessageMoveTasks is a 429 naming ListMessageMoveTasks', async () => {
    const { error } = await startMove({ ListMessageMoveTasks: jsonError(400, 'ThrottlingException') });
    expect(error).toBeInstanceOf(ThrottledError);
    expect((error as Error).message).toContain('SQS ListMessageMoveTasks');
  });

  it('a JSON 500 InternalError of StartMessageMoveTask is a 503 naming StartMessageMoveTask', async () => {
    const { error } = await startMove({
      ListMessageMoveTasks: OK_LIST,
      StartMessageMoveTask: jsonError(500, 'InternalError'),
    });
    expect(error).toBeInstanceOf(DependencyError);
    expect((error as Error).message).toContain('SQS StartMessageMoveTask failed');
    expect((error as Error).message).not.toContain('ListMessageMoveTasks');
  });

  it('an HTML 503 from a proxy is an outage (503), not a missing action', async () => {
    const { error } = await startMove({ ListMessageMoveTasks: { ...MOTO_HTML_500, status: 503 } });
    expect(error).toBeInstanceOf(DependencyError);
    expect((error as Error).message).toContain('SQS ListMessageMoveTasks failed');
  });

  it('access denied is rethrown as is (a deployment error, not a fallback)', async () => {
    const { error } = await startMove({ ListMessageMoveTasks: jsonError(403, 'AccessDenied') });
    expect(error).toMatchObject({ name: 'AccessDenied' });
    expect(error).not.toBeInstanceOf(DependencyError);
  });

  it('UnsupportedOperation (a move task already running) is a 409 redrive_refused naming the call', async () => {
    const { error } = await startMove({
      ListMessageMoveTasks: OK_LIST,
      StartMessageMoveTask: jsonError(400, 'UnsupportedOperation'),
    });
    expect(error).toBeInstanceOf(ConflictError);
    expect(error).toMatchObject({ code: 'redrive_refused' });
    expect((error as Error).message).toContain('StartMessageMoveTask');
  });
});

describe('isUnimplementedAnswer', () => {
  const withStatus = (status: number, fields: object) => ({ ...fields, $metadata: { httpStatusCode: status } });

  it('is false for non-errors and for named errors of implemented calls', () => {
    expect(isUnimplementedAnswer(undefined)).toBe(false);
    expect(isUnimplementedAnswer('NotImplemented')).toBe(false);
    expect(isUnimplementedAnswer(withStatus(500, { name: 'InternalError', message: 'boom' }))).toBe(false);
    expect(isUnimplementedAnswer(withStatus(400, { name: 'ThrottlingException' }))).toBe(false);
    expect(isUnimplementedAnswer(withStatus(400, { name: 'UnsupportedOperation' }))).toBe(false);
  });

  it('needs HTTP 500 for a non-protocol answer: a deserialization failure at 502/503/504 is an outage', () => {
    const html = { name: 'SyntaxError', message: 'Unexpected token <\n  Deserialization error: ...' };
    expect(isUnimplementedAnswer(withStatus(500, html))).toBe(true);
    for (const status of [200, 502, 503, 504]) expect(isUnimplementedAnswer(withStatus(status, html))).toBe(false);
    expect(isUnimplementedAnswer({ name: 'SyntaxError', message: 'no status' })).toBe(false);
  });
});
