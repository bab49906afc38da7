import { randomBytes, randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import { LOCAL_ACCOUNT_ID } from './sqs';

/** Options for {@link lambdaContext}. */
export interface LambdaContextOptions {
  functionName: string;
  /** The function's timeout; `getRemainingTimeInMillis()` counts down from it. */
  timeoutMs: number;
  /** @default 'us-east-1' */
  region?: string;
  /** @default 1024 */
  memoryMb?: number;
  /** @default a random UUID */
  awsRequestId?: string;
}

/**
 * A Lambda `Context` like the Node.js runtime passes for one invocation: a fresh
 * `awsRequestId`, the function's ARN in the local account, log group/stream names, and
 * `getRemainingTimeInMillis()` counting down (on the wall clock) from `timeoutMs`.
 *
 * @example
 * const context = lambdaContext({ functionName: 'orrery-api', timeoutMs: 10_000 });
 * await handler(event, context);
 */
export function lambdaContext(options: LambdaContextOptions): Context {
  const region = options.region ?? 'us-east-1';
  const deadline = Date.now() + options.timeoutMs;
  const day = new Date().toISOString().slice(0, 10).replaceAll('-', '/');
  const unsupported = () => {
    throw new Error('context.done/fail/succeed are not supported by the Node.js 24 runtime; return or throw instead');
  };
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: options.functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:${LOCAL_ACCOUNT_ID}:function:${options.functionName}`,
    memoryLimitInMB: String(options.memoryMb ?? 1024),
    awsRequestId: options.awsRequestId ?? randomUUID(),
    logGroupName: `/aws/lambda/${options.functionName}`,
    logStreamName: `${day}/[$LATEST]${randomBytes(16).toString('hex')}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: unsupported,
    fail: unsupported,
    succeed: unsupported,
  };
}

/**
 * Runs `invoke` with Lambda's timeout: if it has not settled after `timeoutMs`, the result
 * is a `Task timed out` error (the handler keeps running in this process, but its outcome is
 * ignored, as Lambda would have frozen it).
 */
export async function withLambdaTimeout<T>(timeoutMs: number, invoke: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`Task timed out after ${(timeoutMs / 1000).toFixed(2)} seconds`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([Promise.resolve().then(invoke), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
