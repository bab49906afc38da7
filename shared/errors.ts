/**
 * Every error Orrery raises on purpose. HTTP-facing errors carry a status and a
 * machine-readable `code`; `toJSON()` gives the one response shape used everywhere:
 * `{ "error": { "code", "message", "issues"? } }`.
 */

/** One offending field of a rejected request. `path` is dotted (`payload.to`). */
export interface FieldIssue {
  path: string;
  message: string;
}

export interface OrreryErrorOptions {
  cause?: unknown;
  issues?: FieldIssue[];
  details?: Record<string, unknown>;
}

/** Base class: every named error below extends it. */
export class OrreryError extends Error {
  readonly code: string;
  readonly status: number;
  readonly issues: FieldIssue[] | undefined;
  readonly details: Record<string, unknown> | undefined;
  /** True when the same request may succeed if sent again later. */
  readonly retryable: boolean;

  constructor(
    code: string,
    status: number,
    message: string,
    options: OrreryErrorOptions & { retryable?: boolean } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.issues = options.issues;
    this.details = options.details;
    this.retryable = options.retryable ?? false;
  }

  toJSON(): { error: { code: string; message: string; issues?: FieldIssue[] } & Record<string, unknown> } {
    return {
      error: {
        code: this.code,
        message: this.message,
        ...(this.issues ? { issues: this.issues } : {}),
        ...(this.details ?? {}),
      },
    };
  }
}

/** 400: the request is malformed or fails a schema. `issues` names each field. */
export class ValidationError extends OrreryError {
  constructor(message: string, issues: FieldIssue[] = [], code = 'validation_failed') {
    super(code, 400, message, { issues });
  }
}

/**
 * 403: the caller's grants do not allow this call (see docs/security.md). Names the action (and a
 * control call's sub-action) and the first job type not granted; nothing was written.
 */
export class ForbiddenError extends OrreryError {
  constructor(
    message: string,
    readonly access: { action: string; control?: string; type?: string },
  ) {
    super('forbidden', 403, message, {
      details: {
        action: access.action,
        ...(access.control !== undefined ? { control: access.control } : {}),
        ...(access.type !== undefined ? { type: access.type } : {}),
      },
    });
  }
}

/** 404: no such job, schedule or route. */
export class NotFoundError extends OrreryError {
  constructor(message: string, code = 'not_found') {
    super(code, 404, message);
  }
}

/** 405: the route exists but not for this method. */
export class MethodNotAllowedError extends OrreryError {
  readonly allow: string[];
  constructor(method: string, path: string, allow: string[]) {
    super('method_not_allowed', 405, `${method} is not allowed on ${path}; use ${allow.join(', ')}`);
    this.allow = allow;
  }
}

/** 409: the request conflicts with what is stored (id reuse, illegal state change). */
export class ConflictError extends OrreryError {
  constructor(message: string, code = 'conflict', details?: Record<string, unknown>) {
    super(code, 409, message, details ? { details } : {});
  }
}

/** 413: the body or payload is larger than Orrery accepts. The limit is in the message. */
export class PayloadTooLargeError extends OrreryError {
  constructor(message: string, limitBytes: number) {
    super('payload_too_large', 413, message, { details: { limitBytes } });
  }
}

/** 415: the body is not JSON. */
export class UnsupportedMediaTypeError extends OrreryError {
  constructor(contentType: string | undefined) {
    super(
      'unsupported_media_type',
      415,
      `Content-Type must be application/json${contentType ? ` (got ${contentType})` : ''}`,
    );
  }
}

/** 429: AWS throttled us; the same request can be sent again after a pause. */
export class ThrottledError extends OrreryError {
  constructor(message: string, cause?: unknown) {
    super('throttled', 429, message, { cause, retryable: true });
  }
}

/**
 * 503: a dependency failed in a way that may pass; the same request may be sent again. `details`
 * says what was written already (e.g. the `jobId` of a job stored but not yet dispatched).
 */
export class DependencyError extends OrreryError {
  constructor(message: string, cause?: unknown, details?: Record<string, unknown>) {
    super('dependency_failed', 503, message, { cause, retryable: true, ...(details ? { details } : {}) });
  }
}

/** 500: a configuration or programming error. Never shown to callers with its stack. */
export class ConfigError extends OrreryError {
  constructor(message: string) {
    super('config_error', 500, message);
  }
}

/**
 * Throw from a job handler to fail the job at once, skipping remaining attempts.
 *
 * @example
 * if (!user) throw new PermanentError(`user ${id} does not exist`);
 */
export class PermanentError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PermanentError';
  }
}

/** The attempt ran past its job type's `timeout`. */
export class JobTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`job exceeded its timeout of ${timeoutMs} ms`);
    this.name = 'JobTimeoutError';
  }
}

/** A write conditioned on our lease failed: another worker (or a cancel) owns the job now. */
export class LeaseLostError extends Error {
  constructor(jobId: string, token: number) {
    super(`lease on job ${jobId} (token ${token}) was lost; the write was not applied`);
    this.name = 'LeaseLostError';
  }
}

/**
 * A step, sleep or signal wait was used wrongly (a bad or reused name, a result too large to
 * record, a sleep past the horizon): a mistake in the handler, so the job fails at once.
 */
export class StepUsageError extends PermanentError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StepUsageError';
  }
}

/** `ctx.waitForSignal(name, { onTimeout: 'throw' })` timed out: no later attempt can change that, so the job fails. */
export class SignalTimeoutError extends PermanentError {
  constructor(name: string, timeoutAt: string) {
    super(`no signal "${name}" arrived before ${timeoutAt}`);
    this.name = 'SignalTimeoutError';
  }
}

/**
 * The job a `ctx.invoke` started ended without succeeding (failed, cancelled, expired or
 * skipped). Recorded in the parent's journal, so every replay throws the same. Uncaught, it
 * fails the parent for good (a retry would read the same outcome).
 */
export class InvokedJobFailedError extends PermanentError {
  constructor(
    readonly invoke: string,
    readonly childId: string,
    readonly childState: string,
    readonly childError?: { name: string; message: string },
  ) {
    super(
      `invoked job ${childId} ("${invoke}") ended ${childState}` +
        (childError ? `: ${childError.name}: ${childError.message}` : ''),
    );
    this.name = 'InvokedJobFailedError';
  }
}

/**
 * An offloaded value (a payload, a result, a step result or a signal kept in the payload bucket)
 * cannot be read back: its object is gone, or the function has no bucket configured.
 */
export class BlobMissingError extends Error {
  constructor(
    readonly key: string,
    why: string,
  ) {
    super(`the offloaded value ${key} cannot be read: ${why}`);
    this.name = 'BlobMissingError';
  }
}

/**
 * A replay of a job whose code no longer makes the calls its journal recorded, in the same order
 * (a step renamed, removed or moved; see docs/workflows.md, "Changing code safely"). The attempt
 * ends with reason `nondeterministic` and the job is `held` (not terminal: no retry, no
 * onFailure, its dependants kept waiting) for an operator to retry after a fix, rerun from a
 * step, or cancel: its recorded results are never mixed into code that no longer expects them. The message names the position, the recorded call and the
 * one made now, and both code versions.
 */
export class NondeterminismError extends PermanentError {
  /** The `reason` of the attempt's error on the job. */
  readonly code = 'nondeterministic';
  constructor(
    message: string,
    readonly divergence: {
      position: number;
      recorded?: { kind: string; name: string; version?: string };
      called?: { kind: string; name: string };
      recordedAt?: number;
      version?: string;
    },
  ) {
    super(message);
    this.name = 'NondeterminismError';
  }
}
