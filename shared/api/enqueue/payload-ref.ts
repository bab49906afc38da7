/**
 * Large payloads at enqueue (shared/core/blobs.ts): a request may name an upload
 * (`payloadRef`, from `POST /uploads`) instead of carrying its payload, and a payload over the
 * inline limit is kept in the payload bucket. An upload is read and validated against the type's
 * schema like any other payload, then stored as one: the job never refers to the upload itself.
 */

import { type BlobStore, blobKey, checkUploadRef, MAX_BLOB_BYTES, offload } from '../../core/blobs';
import { MAX_PAYLOAD_BYTES } from '../../core/limits';
import { ValidationError } from '../../errors';

/** The field of a refusal: `payloadRef` under the request's path (`jobs.3` in a batch). */
function fieldOf(path: string): string {
  return path ? `${path}.payloadRef` : 'payloadRef';
}

/**
 * A request body with its `payloadRef` read: the upload's JSON becomes its `payload` (one S3 HEAD,
 * one GET); `payloadRef` stays only to be checked again where the payload is stored. A body
 * without `payloadRef` is returned as it is, at no cost. Refusals (400, nothing written):
 * `invalid_payload_ref` (not a string of an upload's form, both `payload` and `payloadRef`, or
 * an upload that is not a JSON object), `payload_ref_not_found` (nothing uploaded there: unknown,
 * expired, or the PUT has not been sent), `payload_ref_too_large` (over {@link MAX_BLOB_BYTES}),
 * `payload_ref_unsupported` (the deployment has no payload bucket).
 */
export async function withUploadedPayload(blobs: BlobStore | undefined, body: unknown, path = ''): Promise<unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body) || !('payloadRef' in body)) return body;
  const field = fieldOf(path);
  const request = body as { payloadRef?: unknown; payload?: unknown };
  const key = checkUploadRef(request.payloadRef, field);
  if (request.payload !== undefined) {
    throw new ValidationError(
      'give payload or payloadRef, not both',
      [{ path: field, message: 'cannot be combined with payload' }],
      'invalid_payload_ref',
    );
  }
  if (!blobs) {
    throw new ValidationError(
      'this deployment has no payload bucket: payloadRef is not accepted',
      [{ path: field, message: 'send the payload inline' }],
      'payload_ref_unsupported',
    );
  }
  const size = await blobs.size(key);
  if (size === undefined) {
    throw new ValidationError(
      `nothing was uploaded under ${key}`,
      [{ path: field, message: 'must name an upload whose PUT succeeded (POST /uploads, then PUT to its url)' }],
      'payload_ref_not_found',
    );
  }
  if (size > MAX_BLOB_BYTES) {
    throw new ValidationError(
      `the upload is ${size} bytes; the limit is ${MAX_BLOB_BYTES}`,
      [{ path: field, message: `must be at most ${MAX_BLOB_BYTES} bytes of JSON` }],
      'payload_ref_too_large',
    );
  }
  const text = await blobs.get(key);
  if (text === undefined) {
    throw new ValidationError(
      `nothing was uploaded under ${key}`,
      [{ path: field, message: 'must name an upload whose PUT succeeded' }],
      'payload_ref_not_found',
    );
  }
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    payload = undefined;
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    throw new ValidationError(
      'the upload is not a JSON object',
      [{ path: field, message: 'must name an upload of a JSON object (the payload)' }],
      'invalid_payload_ref',
    );
  }
  return { ...request, payload };
}

/**
 * What the job item keeps for a checked payload (an upload's too): the payload itself within
 * {@link MAX_PAYLOAD_BYTES} (no request), else a reference to the object it is written to (one S3
 * PUT, before anything else is written).
 */
export async function storedPayload(
  blobs: BlobStore | undefined,
  request: { payloadRef?: string | undefined },
  payload: unknown,
  jobId: string,
  unique: string,
): Promise<unknown> {
  // An upload's value, read and checked, is stored as any payload: inline, or a copy of its own
  // under `p/` (one PUT). Never the upload's key: its presigned URL stays valid after the enqueue,
  // and a PUT through it would change the payload of a job already checked and keyed.
  if (request.payloadRef !== undefined) checkUploadRef(request.payloadRef, 'payloadRef');
  return await offload(blobs, payload, {
    inlineLimit: MAX_PAYLOAD_BYTES,
    key: () => blobKey('payload', jobId, unique),
    what: 'payload',
  });
}
