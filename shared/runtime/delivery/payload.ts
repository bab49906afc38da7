/**
 * The payload and result of an attempt as the handler sees them and as they are stored
 * (shared/core/blobs.ts, docs/payloads.md): the payload read back (when offloaded) and checked
 * against the type's schema before the handler is called, a result checked and written to the
 * payload bucket when large, and the parents' offloaded results read back for `ctx.parents()`.
 */
import { randomUUID } from 'node:crypto';
import { blobKey, isBlobRef, MAX_BLOB_BYTES, offload, resolveBlob } from '../../core/blobs';
import type { Job } from '../../core/job';
import { MAX_RESULT_BYTES } from '../../core/limits';
import * as z from '../../core/zod-mini';
import { BlobMissingError, PermanentError, ValidationError } from '../../errors';
import type { Logger } from '../../logger';
import type { WorkerKit } from './kit';
import { type AttemptResult, resultProblem } from './outcome';

/**
 * The job's payload as the handler gets it: an offloaded one read back from the payload bucket.
 * An object that is gone (or no bucket to read it from) is `missing`: the job cannot run. Any
 * other error (S3 throttled or down) is thrown, and the message comes back.
 */
async function payloadOf(
  kit: WorkerKit,
  job: Job,
  log: Logger,
): Promise<{ value: unknown; missing?: undefined } | { missing: BlobMissingError }> {
  if (!isBlobRef(job.payload)) return { value: job.payload };
  try {
    return { value: await resolveBlob(kit.deps.blobs, job.payload) };
  } catch (error) {
    if (error instanceof BlobMissingError) {
      log.error("the job's offloaded payload cannot be read", { key: error.key });
      return { missing: error };
    }
    throw error;
  }
}

/**
 * A result over the inline limit goes to the payload bucket (one S3 PUT) and the job keeps its
 * reference; one that fits is kept as it is (no request). A PUT that fails fails the attempt,
 * which is retried as any other failure.
 */
async function offloadResult(kit: WorkerKit, job: Job, result: unknown): Promise<AttemptResult> {
  try {
    return {
      ok: true,
      result: await offload(kit.deps.blobs, result, {
        inlineLimit: MAX_RESULT_BYTES,
        key: () => blobKey('result', job.id, `${job.attempts}-${randomUUID()}`),
        what: 'result',
      }),
    };
  } catch (error) {
    return { ok: false, error: error instanceof ValidationError ? new PermanentError(error.message) : error };
  }
}

/** The parents' results as values: an offloaded one read back (one S3 GET each), the others as they are. */
export async function withResolvedResults<T extends { result: unknown }>(
  kit: WorkerKit,
  reading: Promise<Record<string, T>>,
): Promise<Record<string, T>> {
  const parents = await reading;
  const entries = await Promise.all(
    Object.entries(parents).map(
      async ([id, parent]) => [id, { ...parent, result: await resolveBlob(kit.deps.blobs, parent.result) }] as const,
    ),
  );
  return Object.fromEntries(entries);
}

/**
 * The payload the handler is called with: read back when offloaded (one S3 GET), then parsed with
 * the type's schema (zod's core parse: the author's schema may be full zod or zod/mini). Not ok:
 * the job cannot run (its object is gone, or the payload no longer matches), and fails for good.
 */
export async function handlerPayload(
  kit: WorkerKit,
  job: Job,
  log: Logger,
): Promise<{ ok: true; value: unknown } | { ok: false; error: Error; reason: string }> {
  const given = await payloadOf(kit, job, log);
  if (given.missing) return { ok: false, error: given.missing, reason: 'payload_missing' };
  const parsed = z.safeParse(kit.def.spec.payload, given.value);
  if (parsed.success) return { ok: true, value: parsed.data };
  const error = new PermanentError(`payload no longer matches the ${kit.type} schema: ${parsed.error.message}`);
  return { ok: false, error, reason: 'invalid_payload' };
}

/** A handler's result as it is stored: within its limit (the bucket's, with one), large ones offloaded. */
export async function storedResult(kit: WorkerKit, job: Job, result: unknown): Promise<AttemptResult> {
  const problem = resultProblem(result, kit.deps.blobs ? MAX_BLOB_BYTES : MAX_RESULT_BYTES);
  if (problem) return { ok: false, error: new PermanentError(problem) };
  return await offloadResult(kit, job, result);
}
