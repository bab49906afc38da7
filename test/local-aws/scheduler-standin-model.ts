/**
 * Data model and request validation of the EventBridge Scheduler stand-in
 * (`scheduler-standin.ts`). Constraints come from the Scheduler Smithy model (aws-sdk-js-v3
 * `codegen/sdk-codegen/aws-models/scheduler.json`); messages follow AWS's wording where known.
 */
import {
  isValidTimeZone,
  type ParsedExpression,
  parseScheduleExpression,
  ScheduleExpressionError,
} from '../../shared/core/schedule-expression';

export const DEFAULT_GROUP = 'default';
export type ScheduleState = 'ENABLED' | 'DISABLED';
export type ActionAfterCompletion = 'NONE' | 'DELETE';

/** A schedule's target as stored and echoed by GetSchedule (members the stand-in does not interpret are kept as sent). */
export interface SchedulerTarget {
  Arn: string;
  RoleArn: string;
  Input?: string;
  RetryPolicy?: { MaximumRetryAttempts?: number; MaximumEventAgeInSeconds?: number };
  DeadLetterConfig?: { Arn?: string };
  SqsParameters?: { MessageGroupId?: string };
  [member: string]: unknown;
}

/** A schedule held by the stand-in. Dates are epoch milliseconds (the wire uses epoch seconds). */
export interface StoredSchedule {
  Name: string;
  GroupName: string;
  Arn: string;
  ScheduleExpression: string;
  /** IANA zone; `UTC` when the request had none (as GetSchedule reports). */
  ScheduleExpressionTimezone: string;
  Description?: string;
  StartDate?: number;
  EndDate?: number;
  State: ScheduleState;
  KmsKeyArn?: string;
  Target: SchedulerTarget;
  FlexibleTimeWindow: { Mode: 'OFF' | 'FLEXIBLE'; MaximumWindowInMinutes?: number };
  ActionAfterCompletion: ActionAfterCompletion;
  CreationDate: number;
  LastModificationDate: number;
  /** Stand-in bookkeeping: when it fires next (epoch ms), `undefined` when it never will or is disabled. */
  nextFireAt?: number;
}

/** The validated body of a CreateSchedule or UpdateSchedule request. */
export interface ScheduleRequest {
  fields: Omit<StoredSchedule, 'Arn' | 'CreationDate' | 'LastModificationDate' | 'nextFireAt'>;
  parsed: ParsedExpression;
  clientToken?: string;
}

export type SchedulerErrorType =
  | 'ValidationException'
  | 'ResourceNotFoundException'
  | 'ConflictException'
  | 'InternalServerException'
  | 'UnknownOperationException';

/** An error the stand-in sends as AWS does: status, `x-amzn-errortype` header, `{"Message"}` body. */
export class SchedulerApiError extends Error {
  constructor(
    readonly type: SchedulerErrorType,
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = type;
  }
}

export const validationError = (message: string) => new SchedulerApiError('ValidationException', 400, message);
export const notFoundError = (message: string) => new SchedulerApiError('ResourceNotFoundException', 404, message);
export const conflictError = (message: string) => new SchedulerApiError('ConflictException', 409, message);

export const NAME_PATTERN = /^[0-9a-zA-Z-_.]+$/;
const ROLE_ARN_PATTERN = /^arn:aws(-[a-z]+)?:iam::\d{12}:role\/[\w+=,.@/-]+$/;
const SQS_ARN_PATTERN = /^arn:aws(-[a-z]+)?:sqs:[a-z0-9-]+:\d{12}:[a-zA-Z0-9\-_]+$/;
const KMS_ARN_PATTERN = /^arn:aws(-[a-z]+)?:kms:[a-z0-9-]+:\d{12}:(key|alias)\/[0-9a-zA-Z-_]*$/;
const CLIENT_TOKEN_PATTERN = /^[a-zA-Z0-9-_]+$/;
const FIVE_MINUTES_MS = 5 * 60_000;

type Json = Record<string, unknown>;

function describeValue(value: unknown): string {
  if (value === undefined || value === null) return 'null';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return `'${text.length > 100 ? `${text.slice(0, 100)}…` : text}'`;
}

/** Collects constraint violations and reports them in AWS's "N validation errors detected" form. */
export class Constraints {
  private readonly errors: string[] = [];

  private add(path: string, value: unknown, constraint: string): undefined {
    this.errors.push(`Value ${describeValue(value)} at '${path}' failed to satisfy constraint: Member ${constraint}`);
    return undefined;
  }

  object(path: string, value: unknown, required: boolean): Json | undefined {
    if (value === undefined || value === null) return required ? this.add(path, value, 'must not be null') : undefined;
    if (typeof value !== 'object' || Array.isArray(value)) return this.add(path, value, 'must be a structure');
    return value as Json;
  }

  string(
    path: string,
    value: unknown,
    rules: { required?: boolean; min?: number; max?: number; pattern?: RegExp; values?: readonly string[] },
  ): string | undefined {
    if (value === undefined || value === null)
      return rules.required ? this.add(path, value, 'must not be null') : undefined;
    if (typeof value !== 'string') return this.add(path, value, 'must be a string');
    if (rules.min !== undefined && value.length < rules.min)
      return this.add(path, value, `must have length greater than or equal to ${rules.min}`);
    if (rules.max !== undefined && value.length > rules.max)
      return this.add(path, value, `must have length less than or equal to ${rules.max}`);
    if (rules.pattern && !rules.pattern.test(value))
      return this.add(path, value, `must satisfy regular expression pattern: ${rules.pattern.source}`);
    if (rules.values && !rules.values.includes(value))
      return this.add(path, value, `must satisfy enum value set: [${rules.values.join(', ')}]`);
    return value;
  }

  integer(path: string, value: unknown, rules: { required?: boolean; min: number; max: number }): number | undefined {
    if (value === undefined || value === null)
      return rules.required ? this.add(path, value, 'must not be null') : undefined;
    if (typeof value !== 'number' || !Number.isInteger(value)) return this.add(path, value, 'must be an integer');
    if (value < rules.min) return this.add(path, value, `must have value greater than or equal to ${rules.min}`);
    if (value > rules.max) return this.add(path, value, `must have value less than or equal to ${rules.max}`);
    return value;
  }

  /** A timestamp member: epoch seconds on the wire, returned as epoch ms. */
  timestamp(path: string, value: unknown): number | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'number' || !Number.isFinite(value))
      return this.add(path, value, 'must be a timestamp in epoch seconds');
    return Math.round(value * 1000);
  }

  throwIfAny(): void {
    if (this.errors.length === 0) return;
    const count = this.errors.length;
    throw validationError(`${count} validation error${count > 1 ? 's' : ''} detected: ${this.errors.join('; ')}`);
  }
}

/** Validates a schedule or group name from a URL label or query parameter. */
export function checkName(path: string, value: string | undefined | null, required = true): string | undefined {
  const c = new Constraints();
  const name = c.string(path, value ?? undefined, { required, min: 1, max: 64, pattern: NAME_PATTERN });
  c.throwIfAny();
  return name;
}

function parseTarget(c: Constraints, raw: unknown): SchedulerTarget | undefined {
  const target = c.object('Target', raw, true);
  if (!target) return undefined;
  const arn = c.string('Target.Arn', target.Arn, { required: true, min: 1, max: 1600 });
  const roleArn = c.string('Target.RoleArn', target.RoleArn, {
    required: true,
    min: 1,
    max: 1600,
    pattern: ROLE_ARN_PATTERN,
  });
  c.string('Target.Input', target.Input, { min: 1 });
  const retry = c.object('Target.RetryPolicy', target.RetryPolicy, false);
  const maxAttempts = c.integer('Target.RetryPolicy.MaximumRetryAttempts', retry?.MaximumRetryAttempts, {
    min: 0,
    max: 185,
  });
  const maxAge = c.integer('Target.RetryPolicy.MaximumEventAgeInSeconds', retry?.MaximumEventAgeInSeconds, {
    min: 60,
    max: 86_400,
  });
  const dlq = c.object('Target.DeadLetterConfig', target.DeadLetterConfig, false);
  c.string('Target.DeadLetterConfig.Arn', dlq?.Arn, { min: 1, max: 1600, pattern: SQS_ARN_PATTERN });
  const sqs = c.object('Target.SqsParameters', target.SqsParameters, false);
  c.string('Target.SqsParameters.MessageGroupId', sqs?.MessageGroupId, { min: 1, max: 128 });
  if (arn === undefined || roleArn === undefined) return undefined;
  // GetSchedule reports the default retry policy when none was given.
  return {
    ...structuredClone(target),
    Arn: arn,
    RoleArn: roleArn,
    RetryPolicy: { MaximumEventAgeInSeconds: maxAge ?? 86_400, MaximumRetryAttempts: maxAttempts ?? 185 },
  };
}

/**
 * Validates a CreateSchedule/UpdateSchedule body (both carry the whole schedule).
 *
 * @throws {SchedulerApiError} ValidationException with AWS-style constraint messages, or the
 *   expression/time zone/date problem in plain words.
 */
export function parseScheduleRequest(name: string, body: Json, now: number): ScheduleRequest {
  const c = new Constraints();
  const expression = c.string('ScheduleExpression', body.ScheduleExpression, { required: true, min: 1, max: 256 });
  const groupName = c.string('GroupName', body.GroupName, { min: 1, max: 64, pattern: NAME_PATTERN });
  const timezone = c.string('ScheduleExpressionTimezone', body.ScheduleExpressionTimezone, { min: 1, max: 50 });
  const description = c.string('Description', body.Description, { min: 0, max: 512 });
  const state = c.string('State', body.State, { values: ['ENABLED', 'DISABLED'] }) as ScheduleState | undefined;
  const action = c.string('ActionAfterCompletion', body.ActionAfterCompletion, { values: ['NONE', 'DELETE'] }) as
    | ActionAfterCompletion
    | undefined;
  const kmsKeyArn = c.string('KmsKeyArn', body.KmsKeyArn, { min: 1, max: 2048, pattern: KMS_ARN_PATTERN });
  const clientToken = c.string('ClientToken', body.ClientToken, { min: 1, max: 64, pattern: CLIENT_TOKEN_PATTERN });
  const startDate = c.timestamp('StartDate', body.StartDate);
  const endDate = c.timestamp('EndDate', body.EndDate);
  const window = c.object('FlexibleTimeWindow', body.FlexibleTimeWindow, true);
  const mode = window
    ? (c.string('FlexibleTimeWindow.Mode', window.Mode, { required: true, values: ['OFF', 'FLEXIBLE'] }) as
        | 'OFF'
        | 'FLEXIBLE'
        | undefined)
    : undefined;
  const maxWindow = c.integer('FlexibleTimeWindow.MaximumWindowInMinutes', window?.MaximumWindowInMinutes, {
    min: 1,
    max: 1440,
  });
  const target = parseTarget(c, body.Target);
  c.throwIfAny();
  if (expression === undefined || mode === undefined || target === undefined) throw validationError('Invalid request.');

  let parsed: ParsedExpression;
  try {
    parsed = parseScheduleExpression(expression);
  } catch (err) {
    if (err instanceof ScheduleExpressionError) throw validationError(err.message);
    throw err;
  }
  if (timezone !== undefined && !isValidTimeZone(timezone)) {
    throw validationError(
      `Invalid ScheduleExpressionTimezone '${timezone}': use an IANA time zone name such as UTC, Europe/Berlin or America/New_York.`,
    );
  }
  if (mode === 'FLEXIBLE' && maxWindow === undefined) {
    throw validationError(
      'FlexibleTimeWindow.MaximumWindowInMinutes is required when FlexibleTimeWindow.Mode is FLEXIBLE (1 to 1440 minutes).',
    );
  }
  if (parsed.kind !== 'at') {
    if (startDate !== undefined && startDate < now - FIVE_MINUTES_MS) {
      throw validationError('The StartDate you specify cannot be earlier than 5 minutes ago.');
    }
    if (startDate !== undefined && endDate !== undefined && endDate <= startDate) {
      throw validationError('The EndDate you specify must be later than the StartDate.');
    }
  }

  const fields: ScheduleRequest['fields'] = {
    Name: name,
    GroupName: groupName ?? DEFAULT_GROUP,
    ScheduleExpression: expression,
    ScheduleExpressionTimezone: timezone ?? 'UTC',
    State: state ?? 'ENABLED',
    Target: target,
    FlexibleTimeWindow: maxWindow === undefined ? { Mode: mode } : { Mode: mode, MaximumWindowInMinutes: maxWindow },
    ActionAfterCompletion: action ?? 'NONE',
  };
  if (description !== undefined) fields.Description = description;
  if (startDate !== undefined) fields.StartDate = startDate;
  if (endDate !== undefined) fields.EndDate = endDate;
  if (kmsKeyArn !== undefined) fields.KmsKeyArn = kmsKeyArn;
  return clientToken === undefined ? { fields, parsed } : { fields, parsed, clientToken };
}

const seconds = (ms: number): number => ms / 1000;

/** GetSchedule output (timestamps in epoch seconds). */
export function toGetScheduleOutput(s: StoredSchedule): Json {
  const out: Json = {
    Arn: s.Arn,
    GroupName: s.GroupName,
    Name: s.Name,
    ScheduleExpression: s.ScheduleExpression,
    ScheduleExpressionTimezone: s.ScheduleExpressionTimezone,
    State: s.State,
    CreationDate: seconds(s.CreationDate),
    LastModificationDate: seconds(s.LastModificationDate),
    Target: s.Target,
    FlexibleTimeWindow: s.FlexibleTimeWindow,
    ActionAfterCompletion: s.ActionAfterCompletion,
  };
  if (s.Description !== undefined) out.Description = s.Description;
  if (s.StartDate !== undefined) out.StartDate = seconds(s.StartDate);
  if (s.EndDate !== undefined) out.EndDate = seconds(s.EndDate);
  if (s.KmsKeyArn !== undefined) out.KmsKeyArn = s.KmsKeyArn;
  return out;
}

/** ListSchedules item. */
export function toScheduleSummary(s: StoredSchedule): Json {
  return {
    Arn: s.Arn,
    Name: s.Name,
    GroupName: s.GroupName,
    State: s.State,
    CreationDate: seconds(s.CreationDate),
    LastModificationDate: seconds(s.LastModificationDate),
    Target: { Arn: s.Target.Arn },
  };
}

/** Opaque pagination token: the offset into the sorted result. */
export function encodeNextToken(offset: number): string {
  return Buffer.from(JSON.stringify({ offset }), 'utf8').toString('base64url');
}

export function decodeNextToken(token: string | null): number {
  if (token === null) return 0;
  try {
    const { offset } = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { offset?: unknown };
    if (typeof offset === 'number' && Number.isInteger(offset) && offset >= 0) return offset;
  } catch {
    // fall through
  }
  throw validationError('The NextToken is invalid: pass the NextToken of the previous response unchanged.');
}

/** Reads the optional MaxResults query parameter (1–100, default 100). */
export function parseMaxResults(raw: string | null): number {
  if (raw === null) return 100;
  const c = new Constraints();
  const value = c.integer('MaxResults', /^\d+$/.test(raw) ? Number(raw) : raw, { min: 1, max: 100 });
  c.throwIfAny();
  return value ?? 100;
}
