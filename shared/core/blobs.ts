/**
 * Large values: payloads, results, step results and signal payloads too big for a DynamoDB item
 * (400 KB, shared with the rest of the item) are kept as objects in the deployment's payload
 * bucket, and the item holds a {@link BlobRef} in their place. This module is the rule — what
 * goes inline, what a reference looks like, which references an enqueue may name — and the port
 * ({@link BlobStore}); the S3 adapter is shared/aws/s3-blob-store.ts. No AWS import here.
 *
 * Why a reference inside the value rather than a separate attribute: every place that stores a
 * value (the job item's payload and result, a journal entry, an inbox signal) keeps working
 * unchanged, and only the two ends (the API that accepts a value, the worker that hands it to the
 * handler) know about offloading.
 */

import { BlobMissingError, ValidationError } from '../errors';
import { jsonBytes } from './limits';

/**
 * The largest value kept anywhere: a payload, a result, a step result or a signal payload,
 * inline or offloaded. Over it a value is refused.
 */
export const MAX_BLOB_BYTES = 16 * 1024 * 1024;

/**
 * Largest enqueue body (`POST /jobs`) the API reads: a Function URL takes request payloads of
 * 6 MiB, event envelope included, so this leaves 128 KiB for the envelope and headers. A larger
 * payload goes through an upload (`POST /uploads`).
 */
export const MAX_INLINE_BODY_BYTES = 6 * 1024 * 1024 - 128 * 1024;

/** How long a presigned upload URL is valid. */
export const UPLOAD_URL_TTL_SECONDS = 15 * 60;

/**
 * Days an upload's object is kept: an enqueue must name it within that time (its URL is valid
 * for {@link UPLOAD_URL_TTL_SECONDS}). The job keeps a copy of its own, never the upload.
 */
export const UPLOAD_RETENTION_DAYS = 1;

/** The kinds of value that may be offloaded; each has its own key prefix. */
export type BlobKind = 'payload' | 'result' | 'step' | 'signal' | 'upload';

const PREFIX: Record<BlobKind, string> = {
  payload: 'p/',
  result: 'r/',
  step: 's/',
  signal: 'g/',
  upload: 'u/',
};

/** Object keys: a kind's prefix, then letters, digits and `_ . - /` (ids and hashes), at most 512 characters. */
const KEY_PATTERN = /^[prsgu]\/[A-Za-z0-9_.\-/]{1,510}$/;
/** An upload's key: `u/` and a 32-hex-digit random id. */
const UPLOAD_KEY_PATTERN = /^u\/[0-9a-f]{32}$/;

/**
 * What an item holds in place of an offloaded value: the object's key and the value's size (UTF-8
 * JSON bytes). The marker field has a name no Orrery value uses; a value that happens to have this
 * exact shape is itself offloaded (see {@link mustOffload}), so a reference is never ambiguous.
 */
export interface BlobRef {
  readonly $orreryBlob: 1;
  readonly key: string;
  readonly bytes: number;
}

/** True for a value of the {@link BlobRef} shape (exactly its three fields, a valid key). */
export function isBlobRef(value: unknown): value is BlobRef {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  return (
    Object.keys(v).length === 3 &&
    v.$orreryBlob === 1 &&
    typeof v.key === 'string' &&
    KEY_PATTERN.test(v.key) &&
    typeof v.bytes === 'number' &&
    Number.isSafeInteger(v.bytes) &&
    v.bytes >= 0
  );
}

/**
 * For a value kept inline on a path that does not offload (a rerun's corrected payload, a
 * recurring schedule's payload, an invoked child's payload): one of the {@link BlobRef} shape
 * would be read back as the object it names, so it is refused with a 400 `code` naming `field`.
 *
 * @example
 * refuseReferenceShape(parsed, 'payload', 'invalid_payload');
 */
export function refuseReferenceShape(value: unknown, field: string, code = 'invalid_payload'): void {
  if (!isBlobRef(value)) return;
  throw new ValidationError(
    `${field} has the shape of an offloaded value's reference`,
    [{ path: field, message: 'must not be exactly { $orreryBlob, key, bytes }' }],
    code,
  );
}

/** A reference to `key`, for a value of `bytes` JSON bytes. */
export function blobRef(key: string, bytes: number): BlobRef {
  return { $orreryBlob: 1, key, bytes };
}

/**
 * Whether a value of `bytes` JSON bytes goes to the bucket rather than inline under `inlineLimit`:
 * when it is over the limit, or when it looks like a reference (kept inline, it would be read back
 * as one).
 */
export function mustOffload(value: unknown, bytes: number, inlineLimit: number): boolean {
  return bytes > inlineLimit || isBlobRef(value);
}

/**
 * The key of an offloaded value: its kind's prefix, the job id, and a name unique for that job
 * (an attempt, a step's hash, a random id). Keys are never reused for another value.
 */
export function blobKey(kind: Exclude<BlobKind, 'upload'>, jobId: string, name: string): string {
  const key = `${PREFIX[kind]}${jobId}/${name}`.replace(/[^A-Za-z0-9_.\-/]/g, '_');
  return key.length > 512 ? key.slice(0, 512) : key;
}

/** A new upload's key, from 16 random bytes as hex. */
export function uploadKey(randomHex: string): string {
  const key = `${PREFIX.upload}${randomHex}`;
  if (!UPLOAD_KEY_PATTERN.test(key)) throw new Error(`an upload id is 32 hex digits (got ${randomHex})`);
  return key;
}

/**
 * Checks the `payloadRef` of an enqueue: a string naming an upload (`u/` and 32 hex digits).
 * Throws a 400 `invalid_payload_ref` naming `field`; returns the key.
 */
export function checkUploadRef(ref: unknown, field: string): string {
  if (typeof ref !== 'string' || !UPLOAD_KEY_PATTERN.test(ref)) {
    throw new ValidationError(
      'payloadRef is not an upload reference',
      [{ path: field, message: 'must be the `ref` that POST /uploads returned' }],
      'invalid_payload_ref',
    );
  }
  return ref;
}

/** A presigned PUT: where to send the value, until when. */
export interface PresignedUpload {
  url: string;
  /** Epoch ms after which the URL is refused. */
  expiresAt: number;
}

/**
 * Where offloaded values are kept. Keys are written once and never overwritten with another
 * value. Implemented by `S3BlobStore` (shared/aws) and `FakeBlobStore` (test/support); both pass
 * test/contract/blob-store.contract.ts.
 */
export interface BlobStore {
  /** Writes `body` (UTF-8 JSON text) under `key`. One PUT. */
  put(key: string, body: string): Promise<void>;
  /** The text under `key`, or undefined when there is none. One GET. */
  get(key: string): Promise<string | undefined>;
  /** The size in bytes of the object under `key`, or undefined when there is none. One HEAD. */
  size(key: string): Promise<number | undefined>;
  /** A URL that PUTs the object under `key`, valid for `expiresInSeconds`. No request is made. */
  presignPut(key: string, expiresInSeconds: number): Promise<PresignedUpload>;
}

/**
 * The value as it is stored under an inline limit: itself when it fits (no request), else a
 * reference to an object written with it (one PUT). Without a store, a value over the limit is
 * refused as before ({@link ValidationError}); any value over {@link MAX_BLOB_BYTES} is refused.
 */
export async function offload(
  store: BlobStore | undefined,
  value: unknown,
  at: { inlineLimit: number; key: () => string; what: string },
): Promise<unknown> {
  const text = JSON.stringify(value ?? null);
  const bytes = Buffer.byteLength(text, 'utf8');
  if (!mustOffload(value, bytes, at.inlineLimit)) return value;
  const limit = store ? MAX_BLOB_BYTES : at.inlineLimit;
  if (bytes > limit) {
    throw new ValidationError(`${at.what} is ${bytes} bytes of JSON; the limit is ${limit}`, [
      { path: at.what, message: `must be at most ${limit} bytes of JSON` },
    ]);
  }
  if (!store) {
    // only a reference-shaped value under the limit gets here: without a bucket it cannot be kept
    throw new ValidationError(`${at.what} has the shape of an offloaded value's reference`, [
      { path: at.what, message: 'must not be exactly { $orreryBlob, key, bytes }' },
    ]);
  }
  const key = at.key();
  await store.put(key, text);
  return blobRef(key, bytes);
}

/**
 * The value a stored one stands for: a reference's object read back (one GET), anything else as
 * it is (no request). A reference whose object is gone throws: the value is lost, and the caller
 * must not go on as if it were something else.
 */
export async function resolveBlob(store: BlobStore | undefined, value: unknown): Promise<unknown> {
  if (!isBlobRef(value)) return value;
  if (!store) throw new BlobMissingError(value.key, 'this worker has no payload bucket configured');
  const text = await store.get(value.key);
  if (text === undefined) throw new BlobMissingError(value.key, 'the object is gone');
  return JSON.parse(text);
}

/** UTF-8 JSON bytes of a value (re-exported for the API's checks). */
export { jsonBytes };
