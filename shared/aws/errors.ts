import { DependencyError, ThrottledError } from '../errors';

const THROTTLING = new Set([
  'ThrottlingException',
  'Throttling',
  'ThrottledException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'RequestThrottled',
  'RequestThrottledException',
  'TooManyRequestsException',
  'SlowDown',
  'TransactionInProgressException',
  // a write to an item a transaction is changing at that moment (a contended slot item): try shortly
  'TransactionConflictException',
  'KMSThrottlingException',
]);

/** Node network error codes: the request may not have reached AWS, or its answer was lost. */
const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNABORTED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);
const NETWORK_NAMES = new Set(['TimeoutError', 'RequestTimeout', 'RequestTimeoutException', 'NetworkingError']);

interface SdkError {
  name?: string;
  message?: string;
  code?: string;
  $fault?: 'client' | 'server';
  $metadata?: { httpStatusCode?: number };
}

/** The AWS error name, or undefined for non-AWS errors. */
export function awsErrorName(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null ? (error as SdkError).name : undefined;
}

/**
 * Translates an SDK error (after the SDK's own retries) into Orrery's errors:
 * throttling → {@link ThrottledError} (429), server faults and network failures →
 * {@link DependencyError} (503). Anything else (a request we built wrong) is rethrown as is.
 */
export function translateAwsError(error: unknown, operation: string): never {
  const e = (typeof error === 'object' && error !== null ? error : {}) as SdkError;
  const status = e.$metadata?.httpStatusCode;
  if ((e.name && THROTTLING.has(e.name)) || status === 429) {
    throw new ThrottledError(`AWS throttled ${operation}; retry shortly`, error);
  }
  const network =
    (e.code !== undefined && NETWORK_CODES.has(e.code)) || (e.name !== undefined && NETWORK_NAMES.has(e.name));
  if (e.$fault === 'server' || (status !== undefined && status >= 500) || (status === undefined && network)) {
    throw new DependencyError(`${operation} failed: ${e.name ?? 'error'}: ${e.message ?? String(error)}`, error);
  }
  throw error;
}
