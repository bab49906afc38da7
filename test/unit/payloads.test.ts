/**
 * Large values (shared/core/blobs.ts): the rule of what goes inline, the reference's shape, and
 * what each path costs in payload-bucket requests, on the in-memory ports (FakeBlobStore counts
 * the requests S3 would get). The same paths run on fauxqs' S3 in
 * test/integration/large-payloads.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { JobsService } from '../../shared/api/jobs-service';
import {
  blobKey,
  blobRef,
  checkUploadRef,
  isBlobRef,
  MAX_BLOB_BYTES,
  mustOffload,
  offload,
  resolveBlob,
  uploadKey,
} from '../../shared/core/blobs';
import { defineJobType } from '../../shared/core/job-type';
import { MAX_PAYLOAD_BYTES, MAX_RESULT_BYTES } from '../../shared/core/limits';
import { BlobMissingError, PayloadTooLargeError, ThrottledError, ValidationError } from '../../shared/errors';
import { createLogger } from '../../shared/logger';
import { FakeBlobStore } from '../support/blob-fake';
import { FakeJobQueue, FakeJobScheduler, FakeJobStore, sqsEvent, testConfig } from '../support/fakes';
import { echoJob, harness, messageFor } from './worker-harness';

const KiB = 1024;

describe('the offload rule (shared/core/blobs.ts)', () => {
  it('recognises a reference by its exact shape only', () => {
    expect(isBlobRef(blobRef('p/job-1/a', 10))).toBe(true);
    expect(isBlobRef({ $orreryBlob: 1, key: 'p/job-1/a', bytes: 10, extra: true })).toBe(false);
    expect(isBlobRef({ $orreryBlob: 2, key: 'p/job-1/a', bytes: 10 })).toBe(false);
    expect(isBlobRef({ $orreryBlob: 1, key: 'x/job-1/a', bytes: 10 })).toBe(false);
    expect(isBlobRef({ $orreryBlob: 1, key: 'p/job-1/a', bytes: -1 })).toBe(false);
    expect(isBlobRef([1])).toBe(false);
    expect(isBlobRef(null)).toBe(false);
  });

  it('offloads what is over the inline limit, and anything shaped like a reference whatever its size', () => {
    expect(mustOffload({ a: 1 }, 7, 64)).toBe(false);
    expect(mustOffload({ a: 1 }, 65, 64)).toBe(true);
    expect(mustOffload(blobRef('p/j/a', 1), 40, 64 * KiB)).toBe(true);
  });

  it('keeps a value under the limit as it is, at no request; a larger one is put once and referenced', async () => {
    const blobs = new FakeBlobStore();
    const small = { a: 'x'.repeat(100) };
    expect(await offload(blobs, small, { inlineLimit: KiB, key: () => 'r/j/1', what: 'result' })).toBe(small);
    expect(blobs.requests).toEqual({ put: 0, get: 0, head: 0 });
    const large = { a: 'x'.repeat(2 * KiB) };
    const ref = await offload(blobs, large, { inlineLimit: KiB, key: () => 'r/j/2', what: 'result' });
    expect(ref).toEqual({ $orreryBlob: 1, key: 'r/j/2', bytes: JSON.stringify(large).length });
    expect(blobs.requests).toEqual({ put: 1, get: 0, head: 0 });
    expect(await resolveBlob(blobs, ref)).toEqual(large);
    // a value that merely looks like a reference round-trips as itself
    const lookalike = blobRef('p/j/x', 3);
    const kept = await offload(blobs, lookalike, { inlineLimit: KiB, key: () => 'r/j/3', what: 'result' });
    expect(kept).not.toEqual(lookalike);
    expect(await resolveBlob(blobs, kept)).toEqual(lookalike);
  });

  it('refuses, without a bucket, what is over the inline limit, and with one, what is over MAX_BLOB_BYTES', async () => {
    const big = { a: 'x'.repeat(2 * KiB) };
    await expect(offload(undefined, big, { inlineLimit: KiB, key: () => 'r/j/1', what: 'result' })).rejects.toThrow(
      ValidationError,
    );
    const huge = { a: 'x'.repeat(MAX_BLOB_BYTES) };
    const blobs = new FakeBlobStore();
    await expect(offload(blobs, huge, { inlineLimit: KiB, key: () => 'r/j/1', what: 'result' })).rejects.toThrow(
      /the limit is 16777216/,
    );
    expect(blobs.requests.put).toBe(0);
  });

  it('throws BlobMissingError for a reference whose object is gone', async () => {
    await expect(resolveBlob(new FakeBlobStore(), blobRef('p/j/gone', 3))).rejects.toThrow(BlobMissingError);
  });

  it('accepts only upload keys as payloadRef, and names the field', () => {
    const key = uploadKey('0123456789abcdef0123456789abcdef');
    expect(checkUploadRef(key, 'payloadRef')).toBe(key);
    for (const bad of ['p/job/a', 'u/short', 'u/0123456789ABCDEF0123456789abcdef', 42, undefined]) {
      expect(() => checkUploadRef(bad, 'jobs.2.payloadRef')).toThrow(
        expect.objectContaining({
          code: 'invalid_payload_ref',
          issues: [expect.objectContaining({ path: 'jobs.2.payloadRef' })],
        }),
      );
    }
  });

  it('makes keys of safe characters under the kind prefix', () => {
    expect(blobKey('step', 'job 1', '1-a#b')).toBe('s/job_1/1-a_b');
    expect(blobKey('result', 'j', 'x'.repeat(600)).length).toBe(512);
  });
});

const bigSpec = defineJobType({ type: 'echo', payload: z.object({ blob: z.string() }), timeoutMs: 5_000 });

function jobsWith(blobs?: FakeBlobStore) {
  const store = new FakeJobStore();
  const jobs = new JobsService({
    config: testConfig(['echo']),
    catalog: [bigSpec],
    store,
    queue: new FakeJobQueue(),
    scheduler: new FakeJobScheduler(),
    clock: { now: () => Date.parse('2026-03-01T12:00:00.000Z') },
    log: createLogger({ level: 'silent' }),
    ...(blobs ? { blobs } : {}),
  });
  return { jobs, store };
}

describe('enqueue with a payload bucket', () => {
  it('keeps a small payload inline and makes no bucket request', async () => {
    const blobs = new FakeBlobStore();
    const { jobs, store } = jobsWith(blobs);
    await jobs.enqueue({ type: 'echo', id: 'small', payload: { blob: 'hello' } });
    expect((await store.get('small'))?.payload).toEqual({ blob: 'hello' });
    expect(blobs.requests).toEqual({ put: 0, get: 0, head: 0 });
  });

  it('keeps a payload over 256 KiB in the bucket (one PUT), the item a reference; a replay is still a replay', async () => {
    const blobs = new FakeBlobStore();
    const { jobs, store } = jobsWith(blobs);
    const payload = { blob: 'x'.repeat(MAX_PAYLOAD_BYTES) };
    const first = await jobs.enqueue({ type: 'echo', id: 'big', payload });
    expect(first.created).toBe(true);
    const stored = (await store.get('big'))?.payload;
    expect(isBlobRef(stored)).toBe(true);
    expect(blobs.requests.put).toBe(1);
    expect(JSON.parse(blobs.objects.get((stored as { key: string }).key) ?? '')).toEqual(payload);
    expect((await jobs.enqueue({ type: 'echo', id: 'big', payload })).created).toBe(false);
  });

  it('without a bucket refuses a payload over 256 KiB as before (413)', async () => {
    const { jobs } = jobsWith();
    await expect(
      jobs.enqueue({ type: 'echo', id: 'big', payload: { blob: 'x'.repeat(MAX_PAYLOAD_BYTES) } }),
    ).rejects.toThrow(PayloadTooLargeError);
  });

  it('reads a payloadRef (one HEAD, one GET), validates it, and writes nothing for a bad one', async () => {
    const blobs = new FakeBlobStore();
    const { jobs, store } = jobsWith(blobs);
    const ref = uploadKey('0123456789abcdef0123456789abcdef');
    await blobs.put(ref, JSON.stringify({ blob: 'uploaded' }));
    blobs.requests.put = 0;
    const body = await jobs.withUploadedPayload({ type: 'echo', id: 'up', payloadRef: ref });
    expect(blobs.requests).toEqual({ put: 0, get: 1, head: 1 });
    const out = await jobs.enqueue(body as never);
    expect(out.created).toBe(true);
    // small: kept inline in the item (no PUT), never as a reference to the upload, which its URL could PUT again
    expect((await store.get('up'))?.payload).toEqual({ blob: 'uploaded' });
    expect(blobs.requests.put).toBe(0);
    await expect(
      jobs.withUploadedPayload({ type: 'echo', payloadRef: uploadKey('f'.repeat(32)) }),
    ).rejects.toMatchObject({ code: 'payload_ref_not_found', issues: [{ path: 'payloadRef' }] });
    await expect(jobsWith().jobs.withUploadedPayload({ type: 'echo', payloadRef: ref })).rejects.toMatchObject({
      code: 'payload_ref_unsupported',
    });
  });
});

describe('worker with a payload bucket', () => {
  it('reads an offloaded payload back for the handler (one GET) and keeps a small result inline', async () => {
    const blobs = new FakeBlobStore();
    const seen: unknown[] = [];
    const h = harness({
      blobs,
      run: async (payload) => {
        seen.push(payload);
        return { ok: true };
      },
    });
    await blobs.put('p/j1/a', JSON.stringify({ n: 7 }));
    await h.store.create(echoJob('j1', { payload: blobRef('p/j1/a', 8) }));
    await h.worker(sqsEvent(messageFor('j1')));
    expect(seen).toEqual([{ n: 7 }]);
    expect((await h.store.get('j1'))?.result).toEqual({ ok: true });
    expect(blobs.requests).toEqual({ put: 1, get: 1, head: 0 }); // the put is the test's own
  });

  it('makes no bucket request for a plain small job', async () => {
    const blobs = new FakeBlobStore();
    const h = harness({ blobs });
    await h.store.create(echoJob('j2'));
    await h.worker(sqsEvent(messageFor('j2')));
    expect((await h.store.get('j2'))?.state).toBe('succeeded');
    expect(blobs.requests).toEqual({ put: 0, get: 0, head: 0 });
  });

  it('offloads a result over 64 KiB (one PUT); without a bucket the job fails as before', async () => {
    const big = { text: 'r'.repeat(MAX_RESULT_BYTES) };
    const blobs = new FakeBlobStore();
    const h = harness({ blobs, run: async () => big });
    await h.store.create(echoJob('j3'));
    await h.worker(sqsEvent(messageFor('j3')));
    const job = await h.store.get('j3');
    expect(job?.state).toBe('succeeded');
    expect(isBlobRef(job?.result)).toBe(true);
    expect(await resolveBlob(blobs, job?.result)).toEqual(big);
    expect(blobs.requests.put).toBe(1);

    const bare = harness({ run: async () => big });
    await bare.store.create(echoJob('j4', { maxAttempts: 1 }));
    await bare.worker(sqsEvent(messageFor('j4')));
    expect((await bare.store.get('j4'))?.state).toBe('failed');
  });

  it('fails a job whose offloaded payload is gone, without calling the handler', async () => {
    let calls = 0;
    const h = harness({
      blobs: new FakeBlobStore(),
      run: async () => {
        calls += 1;
      },
    });
    await h.store.create(echoJob('j5', { payload: blobRef('p/j5/gone', 8) }));
    await h.worker(sqsEvent(messageFor('j5')));
    const job = await h.store.get('j5');
    expect(calls).toBe(0);
    expect(job?.state).toBe('failed');
    expect(JSON.stringify(job?.errors)).toContain('payload_missing');
  });
});

describe('the failure hook of a job with an offloaded payload', () => {
  it('gets the payload, as the handler did, not its reference', async () => {
    const blobs = new FakeBlobStore();
    const hooked: unknown[] = [];
    const h = harness({
      blobs,
      run: async () => {
        throw new Error('boom');
      },
      onFailure: async (payload) => {
        hooked.push(payload);
      },
    });
    await blobs.put('p/j6/a', JSON.stringify({ n: 7 }));
    await h.store.create(echoJob('j6', { payload: blobRef('p/j6/a', 8), maxAttempts: 1 }));
    await h.worker(sqsEvent(messageFor('j6')));
    expect((await h.store.get('j6'))?.state).toBe('failed');
    expect(hooked).toEqual([{ n: 7 }]);
  });
});

describe('a throttled payload bucket at the worker', () => {
  it('keeps the message and the job (retried later), rather than failing it', async () => {
    const blobs = new FakeBlobStore();
    await blobs.put('p/j7/a', JSON.stringify({ n: 7 }));
    const throttled = true;
    const get = blobs.get.bind(blobs);
    blobs.get = async (key: string) => {
      if (throttled) throw new ThrottledError('S3 GetObject throttled (SlowDown)');
      return await get(key);
    };
    const seen: unknown[] = [];
    const h = harness({
      blobs,
      run: async (payload) => {
        seen.push(payload);
        return { ok: true };
      },
    });
    await h.store.create(echoJob('j7', { payload: blobRef('p/j7/a', 8) }));
    const first = await h.worker(sqsEvent(messageFor('j7')));
    expect(first.batchItemFailures).toHaveLength(1);
    expect((await h.store.get('j7'))?.state).not.toBe('failed');
    expect(seen).toEqual([]);
  });
});

describe('a refused enqueue with a large payload', () => {
  it('writes nothing to the bucket either (a 400 found after the payload is read writes no object)', async () => {
    const blobs = new FakeBlobStore();
    const { jobs, store } = jobsWith(blobs);
    const payload = { blob: 'x'.repeat(MAX_PAYLOAD_BYTES) };
    await expect(
      jobs.enqueue({ type: 'echo', id: 'both-times', payload, delaySeconds: 5, runAt: '2026-03-01T13:00:00.000Z' }),
    ).rejects.toThrow(ValidationError);
    expect(await store.get('both-times')).toBeUndefined();
    expect(blobs.requests.put).toBe(0);
  });
});
