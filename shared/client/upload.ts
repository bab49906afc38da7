/**
 * Uploads: a payload too large for a Function URL request goes to the payload bucket first, through
 * the presigned PUT that `POST /uploads` answers, and the enqueue names it by reference
 * (`payloadRef`). The PUT goes to S3 itself: the URL carries S3's signature, so it is sent as the
 * API describes it (its method and headers) and never signed by the client.
 */
import { MAX_INLINE_BODY_BYTES } from '../core/blobs';
import { OrreryNetworkError, UploadFailed, UploadUrlExpired } from './errors';
import { type CallSpec, call, retryDelay, sleep, type TransportOptions } from './transport';

const UPLOAD_BRAND: unique symbol = Symbol.for('orrery.upload');

/**
 * A reference to an upload, to enqueue with in place of the payload:
 * `client.enqueue(type, upload)`. Made by `client.upload`, or by {@link uploadRef} from a
 * reference printed by `orrery upload`.
 */
export interface UploadRef {
  /** The upload's reference (`u/` and 32 hex digits): the enqueue's `payloadRef`. */
  readonly ref: string;
  readonly [UPLOAD_BRAND]: true;
}

/** What `client.upload` answers: the reference, and what was stored under it. */
export interface Upload extends UploadRef {
  /** Bytes PUT (the payload's JSON, UTF-8). */
  readonly bytes: number;
  /**
   * When the presigned URL expired (ISO 8601). The upload itself is kept a day: an enqueue must
   * name it within that day.
   */
  readonly expiresAt: string;
}

/** Options of `client.upload`. */
export interface UploadOptions {
  /** Aborts the `POST /uploads` and the PUT. */
  signal?: AbortSignal;
  /**
   * Time limit of each PUT attempt (16 MiB over a slow link takes a while).
   * @default 120_000
   */
  timeoutMs?: number;
}

/** `POST /uploads`'s answer. */
interface UploadTicket {
  ref: string;
  url: string;
  method: string;
  headers: Record<string, string>;
  expiresAt: string;
  maxBytes: number;
}

/**
 * Makes an {@link UploadRef} of a reference made elsewhere (printed by `orrery upload`, or kept
 * from an earlier `client.upload`), to enqueue with.
 * @example
 * await client.enqueue('render-report', uploadRef('u/3f2a…'));
 */
export function uploadRef(ref: string): UploadRef {
  return Object.freeze({ ref, [UPLOAD_BRAND]: true as const });
}

/** True for a value made by `client.upload` or {@link uploadRef} (not for a payload that happens to have a `ref`). */
export function isUploadRef(value: unknown): value is UploadRef {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as Record<symbol, unknown>)[UPLOAD_BRAND] === true &&
    typeof (value as { ref?: unknown }).ref === 'string'
  );
}

/** What may be uploaded: JSON text, its UTF-8 bytes, or a value to serialise as JSON. */
export type UploadBody = string | Uint8Array | object;

/** UTF-8 bytes of what is uploaded: text as it is, bytes as they are, anything else as its JSON. */
export function uploadBytes(body: UploadBody): Uint8Array {
  if (body instanceof Uint8Array) return body;
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  if (typeof text !== 'string') throw new TypeError('the upload has no JSON form (undefined or a function)');
  return new TextEncoder().encode(text);
}

/**
 * Whether an enqueue body of this JSON text is over what the API reads inline
 * ({@link MAX_INLINE_BODY_BYTES}: the Function URL's 6 MB request limit, less room for its envelope).
 */
export function overInlineLimit(text: string): boolean {
  if (text.length > MAX_INLINE_BODY_BYTES) return true;
  if (text.length * 3 <= MAX_INLINE_BODY_BYTES) return false;
  return new TextEncoder().encode(text).byteLength > MAX_INLINE_BODY_BYTES;
}

/** S3's error answer: `<Error><Code>…</Code><Message>…</Message>…</Error>`. */
function s3Error(text: string): { code: string | undefined; message: string | undefined } {
  const field = (name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(text)?.[1];
  return { code: field('Code'), message: field('Message') };
}

/** The URL without its query (the presigned signature and credential): safe to print. */
function withoutQuery(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return '(the presigned URL)';
  }
}

/**
 * `POST /uploads`, then the PUT of `body` to the presigned URL it answers, with the method and
 * headers it names. The PUT is retried as the client retries an idempotent call (a network
 * error, S3's 500 and 503 `SlowDown`): a PUT of the same bytes to the same key again has the
 * effect of one. Throws {@link UploadFailed} when S3 refuses the PUT or the bytes are over the
 * upload's `maxBytes` (then nothing is PUT), {@link UploadUrlExpired} when the URL had expired,
 * and the API's errors for the `POST /uploads` (a deployment without a payload bucket: 404
 * `not_configured`).
 */
export async function upload(
  transport: TransportOptions,
  body: UploadBody,
  options: UploadOptions = {},
): Promise<Upload> {
  const bytes = uploadBytes(body);
  const spec: CallSpec = { method: 'POST', path: '/uploads', idempotent: true, signal: options.signal };
  // signing a URL writes nothing: asking again after a lost answer only makes another URL
  const { body: ticket } = await call<UploadTicket>(transport, spec);
  if (bytes.byteLength > ticket.maxBytes) {
    throw new UploadFailed({
      ref: ticket.ref,
      status: 0,
      attempts: 0,
      message: `the upload is ${bytes.byteLength} bytes; the API takes at most ${ticket.maxBytes} (nothing was sent)`,
    });
  }
  const random = transport.random ?? Math.random;
  const timeoutMs = options.timeoutMs ?? 120_000;
  for (let attempt = 1; ; attempt++) {
    const canRetry = attempt <= transport.retry.retries;
    if (attempt > 1 && Date.now() >= Date.parse(ticket.expiresAt)) {
      throw new UploadUrlExpired({ ref: ticket.ref, status: 0, attempts: attempt - 1, expiresAt: ticket.expiresAt });
    }
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    let response: Response;
    let text: string;
    try {
      response = await transport.fetch(ticket.url, {
        method: ticket.method,
        headers: ticket.headers,
        body: bytes as Uint8Array<ArrayBuffer>,
        signal,
      });
      text = await response.text();
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      if (canRetry) {
        await sleep(retryDelay(attempt, transport.retry, 0, random), options.signal);
        continue;
      }
      throw new OrreryNetworkError({
        method: ticket.method,
        url: withoutQuery(ticket.url),
        timedOut: timeout.aborted,
        attempts: attempt,
        cause: error,
      });
    }
    if (response.ok) return { ref: ticket.ref, bytes: bytes.byteLength, expiresAt: ticket.expiresAt, ...brand };
    const { code, message } = s3Error(text);
    if (response.status === 403 && /expired/i.test(message ?? '')) {
      throw new UploadUrlExpired({
        ref: ticket.ref,
        status: response.status,
        s3Code: code,
        attempts: attempt,
        expiresAt: ticket.expiresAt,
      });
    }
    if ((response.status === 500 || response.status === 503) && canRetry) {
      await sleep(retryDelay(attempt, transport.retry, 0, random), options.signal);
      continue;
    }
    throw new UploadFailed({
      ref: ticket.ref,
      status: response.status,
      s3Code: code,
      attempts: attempt,
      message:
        `the PUT of upload ${ticket.ref} to ${withoutQuery(ticket.url)} failed: S3 answered ${response.status}` +
        `${code ? ` ${code}` : ''}${message ? `: ${message}` : text.trim() ? `: ${text.trim().slice(0, 200)}` : ''}`,
    });
  }
}

const brand = { [UPLOAD_BRAND]: true as const };
