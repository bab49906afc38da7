import {
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  type S3ServiceException,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { BlobStore, PresignedUpload } from '../core/blobs';
import type { AwsClients } from './clients';
import { translateAwsError } from './errors';

/** What S3 answers for a key that holds no object (GET: NoSuchKey; HEAD has no body: NotFound). */
const MISSING = new Set(['NoSuchKey', 'NotFound']);

function isMissing(error: unknown): boolean {
  const name = (error as Partial<S3ServiceException> | undefined)?.name;
  return name !== undefined && MISSING.has(name);
}

/**
 * {@link BlobStore} on an S3 bucket (the stack's payload bucket). Objects are JSON text; a key is
 * written once. SDK errors become Orrery's (throttling → 429, faults → 503, shared/aws/errors.ts);
 * a missing object is `undefined`.
 *
 * The client is built from the environment like the others (`AWS_ENDPOINT_URL_S3` reaches an
 * emulator). Against an endpoint whose host is an IP address (local AWS on 127.0.0.1) the SDK's
 * S3 endpoint rules use path-style URLs by themselves, so no `forcePathStyle` is needed.
 *
 * @example
 * const blobs = new S3BlobStore(new S3Client({}), 'orrery-payloads-123');
 * await blobs.put('p/job-1/a', JSON.stringify(payload));
 */
export class S3BlobStore implements BlobStore {
  private presigner: S3Client | undefined;

  /**
   * @param presignWith The client that signs upload URLs. Signing runs a client's middleware
   * without sending anything, so a client whose requests are counted (shared/aws/cost-middleware.ts,
   * the bench) would count a request that is never made. @default a client of its own, built from
   * the environment like the others, on the first signature
   */
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    presignWith?: S3Client,
  ) {
    this.presigner = presignWith;
  }

  async put(key: string, body: string): Promise<void> {
    try {
      await this.client.send(
        new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: 'application/json' }),
      );
    } catch (error) {
      translateAwsError(error, 'S3 PutObject');
    }
  }

  async get(key: string): Promise<string | undefined> {
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      return out.Body ? await out.Body.transformToString('utf8') : '';
    } catch (error) {
      if (isMissing(error)) return undefined;
      translateAwsError(error, 'S3 GetObject');
    }
  }

  async size(key: string): Promise<number | undefined> {
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return out.ContentLength ?? 0;
    } catch (error) {
      if (isMissing(error)) return undefined;
      translateAwsError(error, 'S3 HeadObject');
    }
  }

  async presignPut(key: string, expiresInSeconds: number): Promise<PresignedUpload> {
    const signedAt = Date.now();
    this.presigner ??= new S3Client({});
    const url = await getSignedUrl(
      this.presigner,
      new PutObjectCommand({ Bucket: this.bucket, Key: key, ContentType: 'application/json' }),
      { expiresIn: expiresInSeconds },
    );
    return { url, expiresAt: signedAt + expiresInSeconds * 1000 };
  }
}

/**
 * The deployment's payload bucket as a {@link BlobStore}, or undefined when the configuration
 * names none (`ORRERY_PAYLOAD_BUCKET` unset): values over the inline limits are then refused.
 *
 * @example
 * const blobs = payloadBlobs(config, clients); // S3BlobStore | undefined
 */
export function payloadBlobs(config: { payloadBucket?: string }, clients: AwsClients): S3BlobStore | undefined {
  return config.payloadBucket && clients.s3 ? new S3BlobStore(clients.s3, config.payloadBucket) : undefined;
}
