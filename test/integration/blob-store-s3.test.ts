/**
 * The blob-store contract (test/contract/blob-store.contract.ts) against the S3 adapter on
 * fauxqs' S3 (the same in-process emulator as the SQS tests, on loopback): the cases the fake
 * passes in test/unit/contract-fakes.test.ts. The adapter's client is a plain `new S3Client({})`
 * reaching fauxqs through `AWS_ENDPOINT_URL_S3` only; the endpoint is an IP address, so the SDK
 * uses path-style URLs by itself, for requests and presigned URLs alike.
 */
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3BlobStore } from '../../shared/aws/s3-blob-store';
import { blobKey } from '../../shared/core/blobs';
import { blobStoreContract } from '../contract/blob-store.contract';
import { LOCAL_CREDENTIALS } from '../local-aws/clients';
import { uniquePrefix } from '../local-aws/namespace';
import { type LocalSqs, startLocalSqs } from '../local-aws/sqs';

let fauxqs: LocalSqs;
let client: S3Client;
let restore: () => void = () => {};
const bucket = `${uniquePrefix('blobs')}-payloads`;

beforeAll(async () => {
  fauxqs = await startLocalSqs();
  const env = {
    AWS_ENDPOINT_URL_S3: fauxqs.endpoint,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
  };
  const previous = Object.fromEntries(Object.keys(env).map((name) => [name, process.env[name]]));
  Object.assign(process.env, env);
  restore = () => {
    for (const [name, value] of Object.entries(previous)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
  client = new S3Client({});
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
});

afterAll(async () => {
  client?.destroy();
  restore();
  await fauxqs?.stop();
});

describe('blob store contract: S3BlobStore on fauxqs S3', () => {
  blobStoreContract(async () => ({
    store: new S3BlobStore(client, bucket),
    async upload(url, body) {
      const response = await fetch(url, { method: 'PUT', body, headers: { 'content-type': 'application/json' } });
      return response.ok;
    },
  }));
});

describe('S3BlobStore errors', () => {
  it('presigns a path-style URL on the endpoint (no DNS needed) that names the key and expires', async () => {
    const store = new S3BlobStore(client, bucket);
    const { url } = await store.presignPut('u/0123456789abcdef0123456789abcdef', 60);
    expect(url.startsWith(`${fauxqs.endpoint}/${bucket}/u/0123456789abcdef0123456789abcdef?`)).toBe(true);
    expect(new URL(url).searchParams.get('X-Amz-Expires')).toBe('60');
  });

  it('lets an S3 error that is not a missing key through (a bucket that does not exist)', async () => {
    const store = new S3BlobStore(client, `${bucket}-absent`);
    await expect(store.get(blobKey('payload', 'job', 'x'))).rejects.toMatchObject({ name: 'NoSuchBucket' });
  });
});
