/**
 * Sends one API call: builds the URL and JSON body, signs each attempt, retries what is safe
 * to retry with backoff, and turns failures into the client's error classes.
 */
import { apiError, errorFromResponse, OrreryNetworkError } from './errors';
import type { RequestSigner } from './signing';

/** How failed requests are retried. */
export interface RetryOptions {
  /**
   * Retries after the first attempt.
   * @default 3
   */
  retries: number;
  /**
   * Cap of the first backoff; it doubles per retry (full jitter: a random delay up to the cap).
   * @default 200
   */
  baseDelayMs: number;
  /**
   * Largest delay between two attempts, `Retry-After` included.
   * @default 5_000
   */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryOptions = { retries: 3, baseDelayMs: 200, maxDelayMs: 5_000 };

export type QueryValue = string | number | Date | undefined;

export interface CallSpec {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path with its dynamic segments already encoded (see {@link segment}). */
  path: string;
  query?: Record<string, QueryValue>;
  /** Sent as JSON. */
  body?: unknown;
  /**
   * Whether sending the request twice has the effect of sending it once, so a request that
   * got no answer (or a 502/504) may be sent again. 429 and 503 are always retried: the API
   * answers them only when nothing was written.
   */
  idempotent: boolean;
  signal?: AbortSignal | undefined;
  /** Request headers of this call (e.g. `idempotency-key`), signed with the rest. @default none */
  headers?: Record<string, string>;
}

export interface TransportOptions {
  baseUrl: URL;
  fetch: typeof fetch;
  signer: RequestSigner | undefined;
  retry: RetryOptions;
  timeoutMs: number;
  headers: Record<string, string>;
  /** Random source for jitter, in [0, 1). @default Math.random */
  random?: () => number;
}

/** Encodes one path segment (a job id, type or schedule name). */
export function segment(value: string): string {
  return strictEncode(value);
}

/** RFC 3986 encoding, as SigV4 canonicalises query strings (so what is signed is what is sent). */
function strictEncode(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

export function buildUrl(baseUrl: URL, path: string, query: Record<string, QueryValue> = {}): URL {
  const url = new URL(baseUrl);
  url.pathname = `${baseUrl.pathname.replace(/\/+$/, '')}${path}`;
  const pairs: string[] = [];
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined) continue;
    const text = value instanceof Date ? value.toISOString() : String(value);
    pairs.push(`${strictEncode(key)}=${strictEncode(text)}`);
  }
  url.search = pairs.length ? `?${pairs.join('&')}` : '';
  url.hash = '';
  return url;
}

/** Delay before retry number `retry` (1-based): full jitter, at least `Retry-After`, at most `maxDelayMs`. */
export function retryDelay(retry: number, options: RetryOptions, retryAfterMs: number, random: () => number): number {
  const cap = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** (retry - 1));
  return Math.min(options.maxDelayMs, Math.max(Math.floor(random() * cap), retryAfterMs));
}

function retryAfterMs(headers: Headers): number {
  const value = headers.get('retry-after');
  if (!value) return 0;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? 0 : Math.max(0, at - Date.now());
}

/** Waits `ms`, or rejects with the signal's reason once it aborts. */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export async function call<T>(options: TransportOptions, spec: CallSpec): Promise<{ status: number; body: T }> {
  const url = buildUrl(options.baseUrl, spec.path, spec.query);
  const bodyText = spec.body === undefined ? undefined : JSON.stringify(spec.body);
  const random = options.random ?? Math.random;
  const pathAndQuery = `${url.pathname}${url.search}`;

  for (let attempt = 1; ; attempt++) {
    const canRetry = attempt <= options.retry.retries;
    let headers: Record<string, string> = {
      accept: 'application/json',
      ...options.headers,
      ...spec.headers,
      ...(bodyText === undefined ? {} : { 'content-type': 'application/json' }),
    };
    if (options.signer) {
      headers = await options.signer({ method: spec.method, url, headers, body: bodyText });
      // fetch sets `host` from the URL itself (the same value that was signed).
      delete headers.host;
    }
    const timeout = AbortSignal.timeout(options.timeoutMs);
    const signal = spec.signal ? AbortSignal.any([spec.signal, timeout]) : timeout;
    let response: Response;
    let text: string;
    try {
      response = await options.fetch(url, {
        method: spec.method,
        headers,
        signal,
        ...(bodyText === undefined ? {} : { body: bodyText }),
      });
      text = await response.text();
    } catch (error) {
      if (spec.signal?.aborted) throw spec.signal.reason;
      if (spec.idempotent && canRetry) {
        await sleep(retryDelay(attempt, options.retry, 0, random), spec.signal);
        continue;
      }
      throw new OrreryNetworkError({
        method: spec.method,
        url: url.toString(),
        timedOut: timeout.aborted,
        attempts: attempt,
        cause: error,
      });
    }

    if (response.ok) {
      try {
        return { status: response.status, body: (text ? JSON.parse(text) : undefined) as T };
      } catch {
        throw apiError({
          status: response.status,
          code: 'invalid_response',
          message: `expected JSON from ${spec.method} ${pathAndQuery}, got: ${text.slice(0, 120)}`,
          requestId: response.headers.get('x-request-id') ?? undefined,
          method: spec.method,
          path: pathAndQuery,
          attempts: attempt,
        });
      }
    }
    const status = response.status;
    const retryable = status === 429 || status === 503 || (spec.idempotent && (status === 502 || status === 504));
    if (retryable && canRetry) {
      await sleep(retryDelay(attempt, options.retry, retryAfterMs(response.headers), random), spec.signal);
      continue;
    }
    throw errorFromResponse({
      status,
      bodyText: text,
      headers: response.headers,
      method: spec.method,
      path: pathAndQuery,
      attempts: attempt,
    });
  }
}
