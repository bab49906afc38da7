import { randomUUID } from 'node:crypto';
import type { BlobStore, PresignedUpload } from '../../shared/core/blobs';

/**
 * In-memory {@link BlobStore} for unit tests; passes test/contract/blob-store.contract.ts like
 * the S3 adapter. A presigned URL is `fake-blob://<token>`, and {@link FakeBlobStore.upload}
 * plays the client's PUT to it (refused once expired). Counts the requests an S3 bucket would be
 * sent, so tests can say what a path costs.
 */
export class FakeBlobStore implements BlobStore {
  readonly objects = new Map<string, string>();
  readonly requests = { put: 0, get: 0, head: 0 };
  private readonly presigned = new Map<string, { key: string; expiresAt: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  async put(key: string, body: string): Promise<void> {
    this.requests.put += 1;
    this.objects.set(key, body);
  }

  async get(key: string): Promise<string | undefined> {
    this.requests.get += 1;
    return this.objects.get(key);
  }

  async size(key: string): Promise<number | undefined> {
    this.requests.head += 1;
    const body = this.objects.get(key);
    return body === undefined ? undefined : Buffer.byteLength(body, 'utf8');
  }

  async presignPut(key: string, expiresInSeconds: number): Promise<PresignedUpload> {
    const token = randomUUID();
    const expiresAt = this.now() + expiresInSeconds * 1000;
    this.presigned.set(token, { key, expiresAt });
    return { url: `fake-blob://${token}`, expiresAt };
  }

  /** The client's PUT to a presigned URL: true when stored, false when the URL is unknown or expired. */
  async upload(url: string, body: string): Promise<boolean> {
    const grant = this.presigned.get(url.replace('fake-blob://', ''));
    if (!grant || this.now() > grant.expiresAt) return false;
    this.objects.set(grant.key, body);
    return true;
  }
}
