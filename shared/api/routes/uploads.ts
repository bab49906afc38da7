import { randomBytes } from 'node:crypto';
import { type BlobStore, MAX_BLOB_BYTES, UPLOAD_URL_TTL_SECONDS, uploadKey } from '../../core/blobs';
import { NotFoundError } from '../../errors';
import { json, type Route } from '../http';

/**
 * `POST /uploads`: a presigned PUT for a payload too large for a Function URL request (6 MB).
 * Answers 201 `{ ref, url, method, headers, expiresAt, maxBytes }`; the client PUTs the payload's
 * JSON to `url`, then enqueues with `{ "type", "payloadRef": ref }` (`POST /jobs` or a batch
 * item). Signing makes no AWS request and writes nothing, so an upload never made costs nothing;
 * an upload never enqueued is removed by the bucket's lifecycle. Granted as `enqueue`, with no
 * job type (the type is checked at the enqueue that names the upload). A deployment without a
 * payload bucket answers 404 `not_configured` (after the access check, as every route).
 */
export function uploadRoutes(blobs: BlobStore | undefined): Route[] {
  return [
    {
      path: '/uploads',
      access: { POST: { action: 'enqueue' } },
      methods: {
        POST: async () => {
          if (!blobs) throw new NotFoundError('this deployment has no payload bucket for uploads', 'not_configured');
          const ref = uploadKey(randomBytes(16).toString('hex'));
          const { url, expiresAt } = await blobs.presignPut(ref, UPLOAD_URL_TTL_SECONDS);
          return json(201, {
            ref,
            url,
            method: 'PUT',
            headers: { 'content-type': 'application/json' },
            expiresAt: new Date(expiresAt).toISOString(),
            maxBytes: MAX_BLOB_BYTES,
          });
        },
      },
    },
  ];
}
