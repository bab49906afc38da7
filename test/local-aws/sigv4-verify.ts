/**
 * Checks a SigV4 `Authorization` header the way a Function URL with `AWS_IAM` auth does, for
 * known local credentials: the signature is computed again over the same canonical request
 * (method, path, query, the signed headers, the body's hash) and compared.
 */
import { timingSafeEqual } from 'node:crypto';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';

/** Secret access keys by access key id. */
export type LocalSecrets = Readonly<Record<string, string>>;

/** What {@link verifySigV4} needs from a request. */
export interface ReceivedRequest {
  method: string;
  /** The request target as received: `/path?query`. */
  url: string;
  /** Lower-case names. */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  body: Buffer;
}

export type Verdict = { ok: true; accessKey: string } | { ok: false; reason: string };

const AUTH =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([a-z0-9-]+)\/([a-z0-9-]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;
/** As AWS: a signature dated more than 15 minutes away from now is refused. */
const MAX_SKEW_MS = 15 * 60_000;

function parseAmzDate(value: string): Date | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!m) return undefined;
  return new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])));
}

/**
 * Verifies the request's SigV4 signature for `service` in `region`.
 *
 * @example
 * const verdict = await verifySigV4({ method, url: req.url, headers: req.headers, body }, { local: 'local' }, 'us-east-1');
 * if (!verdict.ok) return forbidden(verdict.reason);
 */
export async function verifySigV4(
  request: ReceivedRequest,
  secrets: LocalSecrets,
  region: string,
  service = 'lambda',
  now: Date = new Date(),
): Promise<Verdict> {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? AUTH.exec(header) : null;
  if (!match) return { ok: false, reason: 'no SigV4 Authorization header' };
  const [, accessKey = '', day, scopeRegion, scopeService, signedList = '', signature = ''] = match;
  const secret = secrets[accessKey];
  if (secret === undefined) return { ok: false, reason: `unknown access key ${accessKey}` };
  if (scopeRegion !== region || scopeService !== service) {
    return { ok: false, reason: `credential scope ${scopeRegion}/${scopeService}, expected ${region}/${service}` };
  }
  const amzDate = request.headers['x-amz-date'];
  const signingDate = typeof amzDate === 'string' ? parseAmzDate(amzDate) : undefined;
  if (!signingDate || amzDate?.slice(0, 8) !== day) return { ok: false, reason: 'missing or inconsistent x-amz-date' };
  if (Math.abs(now.getTime() - signingDate.getTime()) > MAX_SKEW_MS) return { ok: false, reason: 'signature expired' };

  const signed = signedList.split(';');
  if (!signed.includes('host')) return { ok: false, reason: 'host is not signed' };
  const headers: Record<string, string> = {};
  for (const name of signed) {
    const value = request.headers[name];
    if (value === undefined) return { ok: false, reason: `signed header ${name} is missing` };
    headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  const target = new URL(request.url, 'http://placeholder');
  const query: Record<string, string | string[]> = {};
  for (const [key, value] of target.searchParams) {
    const seen = query[key];
    query[key] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value];
  }
  const host = headers.host ?? '';
  const signer = new SignatureV4({
    service,
    region,
    sha256: Sha256,
    credentials: {
      accessKeyId: accessKey,
      secretAccessKey: secret,
      ...(typeof request.headers['x-amz-security-token'] === 'string'
        ? { sessionToken: request.headers['x-amz-security-token'] }
        : {}),
    },
  });
  const expected = await signer.sign(
    {
      method: request.method,
      protocol: 'http:',
      hostname: host.replace(/:\d+$/, ''),
      path: target.pathname,
      query,
      headers,
      ...(request.body.length > 0 ? { body: request.body.toString('utf8') } : {}),
    },
    { signingDate, signableHeaders: new Set(signed) },
  );
  const got = /Signature=([0-9a-f]{64})$/.exec(expected.headers.authorization ?? '')?.[1] ?? '';
  const same = got.length === signature.length && timingSafeEqual(Buffer.from(got), Buffer.from(signature));
  return same
    ? { ok: true, accessKey }
    : { ok: false, reason: 'The request signature we calculated does not match the signature you provided.' };
}
