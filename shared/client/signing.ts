/**
 * SigV4 signing for the Function URL (service `lambda`). The AWS packages are loaded on the
 * first signed request only, so a client (or the CLI) talking to the local dev server never
 * loads them.
 */
import { SigningError } from './errors';

/** Static AWS credentials. */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

/** Credentials or a function resolving them (e.g. `fromIni({ profile })` from `@aws-sdk/credential-providers`). */
export type CredentialsInput = AwsCredentials | (() => Promise<AwsCredentials>);

/** A request as the signer sees it, before it is sent. */
export interface SignableRequest {
  method: string;
  url: URL;
  /** Lower-case header names. */
  headers: Record<string, string>;
  body: string | undefined;
}

/** Returns the headers to send (the given ones plus the signature's). */
export type RequestSigner = (request: SignableRequest) => Promise<Record<string, string>>;

const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** True for `http(s)://127.0.0.1`, `localhost` and `[::1]` (any port): the local dev server takes unsigned requests. */
export function isLocalUrl(url: URL): boolean {
  return LOCAL_HOSTS.has(url.hostname) || url.hostname.endsWith('.localhost');
}

/**
 * The region to sign for: `region` if given, else the Function URL's, else `AWS_REGION`,
 * `AWS_DEFAULT_REGION`, else `us-east-1`.
 */
export function signingRegion(url: URL, region?: string): string {
  const env = globalThis.process?.env ?? {};
  return region ?? regionFromUrl(url) ?? (env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1');
}

/** The region in a Function URL host (`<id>.lambda-url.<region>.on.aws`), if it is one. */
export function regionFromUrl(url: URL): string | undefined {
  return /\.lambda-url\.([a-z0-9-]+)\.on\.aws$/.exec(url.hostname)?.[1];
}

/**
 * A SigV4 signer for service `lambda`. `credentials` default to the AWS SDK's default chain
 * (environment, SSO, shared config and credentials files, web identity, ECS, EC2 IMDS).
 */
export function sigV4Signer(options: { region: string; credentials?: CredentialsInput | undefined }): RequestSigner {
  let signer: Promise<{ sign(request: unknown): Promise<{ headers: Record<string, string> }> }> | undefined;
  const load = async () => {
    const [{ SignatureV4 }, { Sha256 }] = await Promise.all([
      import('@smithy/signature-v4'),
      import('@aws-crypto/sha256-js'),
    ]);
    const credentials = options.credentials ?? (await import('@aws-sdk/credential-provider-node')).defaultProvider();
    return new SignatureV4({ service: 'lambda', region: options.region, credentials, sha256: Sha256 });
  };
  return async (request) => {
    signer ??= load();
    // A failed load (e.g. a broken install) should not stick for the client's lifetime.
    const active = await signer.catch((error: unknown) => {
      signer = undefined;
      throw error;
    });
    const { url } = request;
    const query: Record<string, string | string[]> = {};
    for (const [key, value] of url.searchParams) {
      const seen = query[key];
      query[key] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value];
    }
    const signed = await active
      .sign({
        method: request.method,
        protocol: url.protocol,
        hostname: url.hostname,
        ...(url.port ? { port: Number(url.port) } : {}),
        path: url.pathname,
        query,
        headers: { ...request.headers, host: url.host },
        ...(request.body === undefined ? {} : { body: request.body }),
      })
      .catch((error: unknown) => {
        throw new SigningError(error);
      });
    return signed.headers;
  };
}
