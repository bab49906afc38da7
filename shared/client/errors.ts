/**
 * Errors the Orrery client throws. An answer from the API that is not a success becomes an
 * {@link OrreryApiError} (a subclass per status, carrying the API's `code`, `issues` and
 * `requestId`); a request that got no answer becomes an {@link OrreryNetworkError}.
 */
import type { JobView } from '../core/job';

/** One offending field of a rejected request, as the API names it (`payload.failTimes`). */
export interface ApiIssue {
  path: string;
  message: string;
}

/** The API's one error shape: `{ "error": { code, message, issues?, requestId?, ... } }`. */
export interface ApiErrorBody {
  code: string;
  message: string;
  issues?: ApiIssue[];
  requestId?: string;
  [extra: string]: unknown;
}

export interface OrreryApiErrorInit {
  status: number;
  code: string;
  message: string;
  issues?: ApiIssue[] | undefined;
  requestId?: string | undefined;
  /** Other fields of the error body (e.g. `limitBytes`, `jobId`). */
  details?: Record<string, unknown> | undefined;
  method: string;
  /** Path and query the request went to (`/jobs/abc`). */
  path: string;
  /** Requests sent, retries included. */
  attempts?: number;
}

/** The API answered with a non-2xx status. Subclasses narrow it by status. */
export class OrreryApiError extends Error {
  /** HTTP status. */
  readonly status: number;
  /** Machine-readable code from the API (`invalid_payload`, `job_not_found`…), or `http_<status>` when the body had none. */
  readonly code: string;
  /** Offending fields; empty when the API named none. */
  readonly issues: ApiIssue[];
  /** The API's request id (from the body or the `x-request-id` header), for the logs. */
  readonly requestId: string | undefined;
  readonly details: Record<string, unknown>;
  readonly method: string;
  readonly path: string;
  readonly attempts: number;

  constructor(init: OrreryApiErrorInit) {
    super(init.message);
    this.name = new.target.name;
    this.status = init.status;
    this.code = init.code;
    this.issues = init.issues ?? [];
    this.requestId = init.requestId;
    this.details = init.details ?? {};
    this.method = init.method;
    this.path = init.path;
    this.attempts = init.attempts ?? 1;
  }

  /** True when sending the same request again later may succeed (429, 503). */
  get retryable(): boolean {
    return this.status === 429 || this.status === 503;
  }

  toJSON(): { error: ApiErrorBody & { status: number } } {
    return {
      error: {
        status: this.status,
        code: this.code,
        message: this.message,
        ...(this.issues.length ? { issues: this.issues } : {}),
        ...(this.requestId ? { requestId: this.requestId } : {}),
        ...this.details,
      },
    };
  }
}

/** 400: the request or payload failed validation (`validation_failed`, `invalid_payload`, `unknown_type`, `malformed_json`…). See `issues`. */
export class ValidationFailed extends OrreryApiError {}
/**
 * 403: the Function URL refused the request (missing or wrong SigV4 signature, wrong region, or no
 * `lambda:InvokeFunctionUrl`), or the API's grants do not allow the call (`forbidden`, with
 * `details.action`, `details.control` and `details.type`: see docs/security.md).
 */
export class Forbidden extends OrreryApiError {}
/** 404: no such job, schedule or type (`job_not_found`…), or the API has no such route (`route_not_found`). */
export class NotFound extends OrreryApiError {}
/** 409: conflicts with what is stored (`id_conflict`: the id exists with another payload; an illegal state change). */
export class Conflict extends OrreryApiError {}
/** 413: body or payload too large; the limit is in `details.limitBytes`. */
export class PayloadTooLarge extends OrreryApiError {}
/** 429: throttled; the client already retried with backoff. */
export class Throttled extends OrreryApiError {}
/** 503: a dependency failed; nothing was written. The client already retried with backoff. */
export class ServiceUnavailable extends OrreryApiError {}
/** 500 (and other 5xx): the API failed; quote `requestId` when reporting it. */
export class InternalError extends OrreryApiError {}

const BY_STATUS: Record<number, new (init: OrreryApiErrorInit) => OrreryApiError> = {
  400: ValidationFailed,
  403: Forbidden,
  404: NotFound,
  409: Conflict,
  413: PayloadTooLarge,
  429: Throttled,
  503: ServiceUnavailable,
};

/** Builds the error for a non-2xx answer: the subclass follows the status. */
export function apiError(init: OrreryApiErrorInit): OrreryApiError {
  const Class = BY_STATUS[init.status] ?? (init.status >= 500 ? InternalError : OrreryApiError);
  return new Class(init);
}

/**
 * Turns a non-2xx answer's body into an error. Orrery's own errors have the
 * `{ error: { code, message, issues } }` shape; the Function URL in front of it answers
 * `{ "Message": "Forbidden" }` (403) or `{ "Message": "Internal Server Error" }` (502), and a
 * proxy may answer anything.
 */
export function errorFromResponse(input: {
  status: number;
  bodyText: string;
  headers: Headers;
  method: string;
  path: string;
  attempts: number;
}): OrreryApiError {
  const { status, bodyText, headers, method, path, attempts } = input;
  const headerRequestId = headers.get('x-request-id') ?? headers.get('x-amzn-requestid') ?? undefined;
  let parsed: unknown;
  try {
    parsed = bodyText ? JSON.parse(bodyText) : undefined;
  } catch {
    parsed = undefined;
  }
  const error = isRecord(parsed) && isRecord(parsed.error) ? parsed.error : undefined;
  if (error && typeof error.code === 'string') {
    const { code, message, issues, requestId, ...details } = error;
    return apiError({
      status,
      code,
      message: typeof message === 'string' ? message : `HTTP ${status}`,
      issues: Array.isArray(issues) ? issues.filter(isIssue) : undefined,
      requestId: typeof requestId === 'string' ? requestId : headerRequestId,
      details,
      method,
      path,
      attempts,
    });
  }
  const awsMessage = isRecord(parsed) && typeof parsed.Message === 'string' ? parsed.Message : undefined;
  let message = awsMessage ?? (bodyText.trim().slice(0, 200) || `HTTP ${status}`);
  if (status === 403) {
    message = `${message}: the Function URL refused the request; check the AWS credentials, the region it is signed for, and lambda:InvokeFunctionUrl on the API function`;
  }
  return apiError({
    status,
    code: status === 403 ? 'forbidden' : `http_${status}`,
    message,
    requestId: headerRequestId,
    method,
    path,
    attempts,
  });
}

/** The request got no HTTP answer: connection refused or reset, DNS failure, or it timed out. */
export class OrreryNetworkError extends Error {
  readonly method: string;
  readonly url: string;
  /** True when the client's `timeoutMs` ran out. */
  readonly timedOut: boolean;
  readonly attempts: number;

  constructor(init: { method: string; url: string; timedOut: boolean; attempts: number; cause: unknown }) {
    const reason = init.timedOut ? 'timed out' : describeCause(init.cause);
    super(`${init.method} ${init.url} failed: ${reason}`, { cause: init.cause });
    this.name = 'OrreryNetworkError';
    this.method = init.method;
    this.url = init.url;
    this.timedOut = init.timedOut;
    this.attempts = init.attempts;
  }
}

/** The request could not be signed: usually no AWS credentials were found. Nothing was sent. */
export class SigningError extends Error {
  constructor(cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(
      `cannot sign the request with SigV4: ${reason}. Configure AWS credentials (environment, AWS_PROFILE, SSO…), ` +
        'or turn signing off (sign: false, --no-sign) for a server that takes unsigned requests',
      { cause },
    );
    this.name = 'SigningError';
  }
}

/**
 * `waitFor` gave up: the timeout passed, the job ended in a state not waited for (`terminal`),
 * or it is `held` for an operator (its replay diverged from its journal: nothing runs it again
 * until an operator retries, reruns or cancels it).
 */
export class JobWaitError extends Error {
  readonly reason: 'timeout' | 'terminal' | 'held';
  /** The job as last seen. */
  readonly job: JobView;

  constructor(reason: 'timeout' | 'terminal' | 'held', job: JobView, message: string) {
    super(message);
    this.name = 'JobWaitError';
    this.reason = reason;
    this.job = job;
  }
}

function describeCause(cause: unknown): string {
  if (!(cause instanceof Error)) return String(cause);
  // undici wraps the socket error: "fetch failed" with the useful part in `cause`.
  const inner = cause.cause;
  if (inner instanceof Error) {
    const code = (inner as Error & { code?: unknown }).code;
    return typeof code === 'string' ? `${code} (${inner.message})` : inner.message;
  }
  return cause.message;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isIssue(value: unknown): value is ApiIssue {
  return isRecord(value) && typeof value.path === 'string' && typeof value.message === 'string';
}

/**
 * `get` or `waitFor` was told the job's type (`{ type }`) and read a job of another type: the
 * types the caller relied on do not describe it.
 */
export class JobTypeMismatch extends Error {
  /** The type the caller said. */
  readonly expected: string;
  /** The job as read. */
  readonly job: JobView;

  constructor(expected: string, job: JobView) {
    super(`job ${job.id} is of type "${job.type}", not "${expected}"`);
    this.name = 'JobTypeMismatch';
    this.expected = expected;
    this.job = job;
  }
}

/**
 * The PUT of an upload's bytes to its presigned URL failed (`client.upload`, or an enqueue that
 * uploaded its payload): S3 answered an error, or the bytes are over the upload's `maxBytes`.
 * Nothing was enqueued. `s3Code` is S3's error code (`AccessDenied`, `SignatureDoesNotMatch`,
 * `EntityTooLarge`…) when its XML answer named one; the presigned URL itself is never in the
 * message (its query string is a credential for 15 minutes).
 */
export class UploadFailed extends Error {
  /** The upload's reference (`u/…`): nothing usable was stored under it. */
  readonly ref: string;
  /** S3's HTTP status; 0 when the PUT was not sent (the bytes were over `maxBytes`). */
  readonly status: number;
  /** S3's error code, when its answer named one. */
  readonly s3Code: string | undefined;
  /** PUTs sent, retries included. */
  readonly attempts: number;

  constructor(init: { ref: string; status: number; s3Code?: string | undefined; message: string; attempts: number }) {
    super(init.message);
    this.name = new.target.name;
    this.ref = init.ref;
    this.status = init.status;
    this.s3Code = init.s3Code;
    this.attempts = init.attempts;
  }
}

/**
 * The upload's presigned URL had expired when its PUT reached S3 (S3 answers 403 `AccessDenied`,
 * "Request has expired"): the URL is valid for 15 minutes from `POST /uploads`, checked against
 * S3's clock. Calling `client.upload` again asks for a new URL; a clock far off S3's, or a PUT
 * that waited too long to start, causes it.
 */
export class UploadUrlExpired extends UploadFailed {
  /** When the API said the URL expires (ISO 8601). */
  readonly expiresAt: string;

  constructor(init: { ref: string; status: number; s3Code?: string | undefined; attempts: number; expiresAt: string }) {
    super({
      ...init,
      message: `the presigned URL of upload ${init.ref} had expired (at ${init.expiresAt}) when its PUT reached S3; upload again for a new URL`,
    });
    this.expiresAt = init.expiresAt;
  }
}
