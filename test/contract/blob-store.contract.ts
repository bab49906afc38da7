/**
 * The contract of {@link BlobStore}, run against the in-memory fake
 * (test/unit/contract-fakes.test.ts) and the S3 adapter on fauxqs' S3
 * (test/integration/contract-adapters.test.ts): what is put is read back byte for byte, a key
 * with no object reads as undefined, and a presigned PUT stores what the client sends.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type BlobStore, blobKey, uploadKey } from '../../shared/core/blobs';

/** One side of the contract: the store, and how a client PUTs a body to a presigned URL. */
export interface BlobLeg {
  store: BlobStore;
  /** Sends `body` to a presigned URL as a client would; true when it was accepted. */
  upload(url: string, body: string): Promise<boolean>;
}

export function blobStoreContract(fresh: () => Promise<BlobLeg>): void {
  const run = randomBytes(4).toString('hex');

  describe('blob store', () => {
    it('reads back what was put, byte for byte (multi-byte UTF-8 included), and its size', async () => {
      const { store } = await fresh();
      const key = blobKey('payload', `job-${run}`, 'a');
      const body = JSON.stringify({ text: 'ünïcødé ✓ 🚀', n: [1, 2, 3] });
      await store.put(key, body);
      expect(await store.get(key)).toBe(body);
      expect(await store.size(key)).toBe(Buffer.byteLength(body, 'utf8'));
    });

    it('answers undefined, not an error, for a key that holds no object', async () => {
      const { store } = await fresh();
      const key = blobKey('result', `job-${run}`, 'never');
      expect(await store.get(key)).toBeUndefined();
      expect(await store.size(key)).toBeUndefined();
    });

    it('keeps a large value whole (2 MiB)', async () => {
      const { store } = await fresh();
      const key = blobKey('step', `job-${run}`, 'big');
      const body = JSON.stringify({ blob: 'x'.repeat(2 * 1024 * 1024) });
      await store.put(key, body);
      const back = await store.get(key);
      expect(back?.length).toBe(body.length);
      expect(back).toBe(body);
    });

    it('stores what a client PUTs to a presigned URL, which expires in the future', async () => {
      const leg = await fresh();
      const key = uploadKey(randomBytes(16).toString('hex'));
      const before = Date.now();
      const presigned = await leg.store.presignPut(key, 60);
      expect(presigned.expiresAt).toBeGreaterThanOrEqual(before + 60_000);
      expect(presigned.expiresAt).toBeLessThanOrEqual(Date.now() + 60_000);
      expect(await leg.store.size(key)).toBeUndefined(); // presigning writes nothing
      const body = JSON.stringify({ uploaded: true });
      expect(await leg.upload(presigned.url, body)).toBe(true);
      expect(await leg.store.get(key)).toBe(body);
      expect(await leg.store.size(key)).toBe(body.length);
    });
  });
}
