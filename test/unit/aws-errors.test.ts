import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoRedriveLog } from '../../shared/aws/dynamo-redrive-log';
import { awsErrorName, translateAwsError } from '../../shared/aws/errors';
import { DependencyError, ThrottledError } from '../../shared/errors';

/** A plain object shaped like an SDK v3 service exception. */
function sdkError(name: string, fault: 'client' | 'server', status: number, message = `${name} message`) {
  return { name, message, $fault: fault, $metadata: { httpStatusCode: status, requestId: 'R1', attempts: 3 } };
}

function translated(error: unknown, operation = 'DynamoDB UpdateItem (claim)'): unknown {
  try {
    translateAwsError(error, operation);
  } catch (thrown) {
    return thrown;
  }
  throw new Error('translateAwsError returned');
}

describe('translateAwsError', () => {
  it('turns ThrottlingException into a retryable 429 ThrottledError keeping the cause', () => {
    const original = sdkError('ThrottlingException', 'client', 400, 'Rate exceeded');
    const error = translated(original, 'SQS SendMessage');
    expect(error).toBeInstanceOf(ThrottledError);
    expect(error).toMatchObject({ status: 429, code: 'throttled', retryable: true });
    expect((error as ThrottledError).message).toBe('AWS throttled SQS SendMessage; retry shortly');
    expect((error as ThrottledError).cause).toBe(original);
  });

  it.each([
    'Throttling',
    'ThrottledException',
    'ProvisionedThroughputExceededException',
    'RequestLimitExceeded',
    'RequestThrottled',
    'RequestThrottledException',
    'TooManyRequestsException',
    'SlowDown',
    'TransactionInProgressException',
    'TransactionConflictException',
    'KMSThrottlingException',
  ])('treats %s as throttling', (name) => {
    expect(translated(sdkError(name, 'client', 400))).toBeInstanceOf(ThrottledError);
  });

  it('treats any HTTP 429 as throttling', () => {
    expect(translated(sdkError('SomethingNew', 'client', 429))).toBeInstanceOf(ThrottledError);
  });

  it('turns a server fault into a retryable 503 DependencyError naming the operation', () => {
    const original = sdkError('InternalServerError', 'server', 500, 'Internal server error');
    const error = translated(original, 'DynamoDB GetItem');
    expect(error).toBeInstanceOf(DependencyError);
    expect(error).toMatchObject({ status: 503, code: 'dependency_failed', retryable: true });
    expect((error as DependencyError).message).toBe(
      'DynamoDB GetItem failed: InternalServerError: Internal server error',
    );
    expect((error as DependencyError).cause).toBe(original);
  });

  it('treats a 5xx status as a server fault even without $fault', () => {
    const error = translated({ name: 'ServiceUnavailable', message: 'x', $metadata: { httpStatusCode: 503 } });
    expect(error).toBeInstanceOf(DependencyError);
  });

  it('turns an error without $metadata (the request never got an answer) into a DependencyError', () => {
    const error = translated({ name: 'TimeoutError', message: 'socket hang up' }, 'SQS ChangeMessageVisibility');
    expect(error).toBeInstanceOf(DependencyError);
    expect((error as DependencyError).message).toBe('SQS ChangeMessageVisibility failed: TimeoutError: socket hang up');
  });

  it('rethrows a non-AWS throwable unchanged (a bug of ours, not a failing dependency)', () => {
    expect(translated('boom', 'op')).toBe('boom');
    expect(translated(new SyntaxError('bad JSON'))).toBeInstanceOf(SyntaxError);
  });

  it('turns a network failure that exhausted SDK retries into a DependencyError', () => {
    const error = translated({
      name: 'Error',
      code: 'ECONNREFUSED',
      message: 'connect ECONNREFUSED',
      $metadata: { attempts: 3 },
    });
    expect(error).toBeInstanceOf(DependencyError);
  });

  it.each([
    ['ValidationException', 400],
    ['ConditionalCheckFailedException', 400],
    ['ResourceNotFoundException', 400],
    ['AccessDeniedException', 403],
    ['QueueDoesNotExist', 400],
  ])('rethrows the client fault %s as is', (name, status) => {
    const original = sdkError(name, 'client', status);
    expect(translated(original)).toBe(original);
  });

  it('treats a network error surfaced after the SDK retries as a DependencyError', () => {
    // Once its retries are spent, the SDK's retry middleware (@smithy/core retryMiddleware) sets
    // `$metadata = { attempts, totalRetryDelay }` on the error it throws, network errors included:
    // there is $metadata, but no httpStatusCode and no $fault.
    const network = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8000'), {
      code: 'ECONNREFUSED',
      $metadata: { attempts: 3, totalRetryDelay: 240 },
    });
    const error = translated(network, 'DynamoDB GetItem');
    expect(error).toBeInstanceOf(DependencyError);
  });
});

describe('awsErrorName', () => {
  it('reads the name of an error-like object and nothing else', () => {
    expect(awsErrorName(sdkError('ThrottlingException', 'client', 400))).toBe('ThrottlingException');
    expect(awsErrorName(new TypeError('x'))).toBe('TypeError');
    expect(awsErrorName('ThrottlingException')).toBeUndefined();
    expect(awsErrorName(null)).toBeUndefined();
  });
});

describe('an adapter translates what its SDK calls throw', () => {
  /** A DynamoDB client whose every call throws `error`. */
  const failing = (error: unknown) => ({ send: async () => Promise.reject(error) }) as unknown as DynamoDBClient;
  const record = { type: 'echo', by: 'anonymous', at: '2026-06-01T00:00:00.000Z', method: 'move-task' } as const;

  it('DynamoRedriveLog: throttling is a 429, a server fault a 503, a refused condition a kept-out record', async () => {
    const throttled = new DynamoRedriveLog(failing(sdkError('ThrottlingException', 'client', 400)), 't');
    await expect(throttled.record(record)).rejects.toBeInstanceOf(ThrottledError);
    await expect(throttled.last('echo')).rejects.toBeInstanceOf(ThrottledError);
    const down = new DynamoRedriveLog(failing(sdkError('InternalServerError', 'server', 500)), 't');
    await expect(down.last('echo')).rejects.toThrow('DynamoDB GetItem (DLQ redrive record) failed');
    const refused = new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });
    await expect(new DynamoRedriveLog(failing(refused), 't').record(record)).resolves.toBe(false);
  });
});
