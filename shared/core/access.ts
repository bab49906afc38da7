/**
 * Who may do what: the callers of the API (principals), what each was granted, and the document
 * the grants are deployed as. Pure: no AWS import.
 *
 * The outer layer is IAM: only a principal with `lambda:InvokeFunctionUrl` on the API reaches it
 * (the construct's `grant*` methods add that permission). This module is the inner layer: the API
 * resolves the caller's IAM identity from the Function URL event (`requestContext.authorizer.iam`)
 * to a {@link Principal}, then checks the call against that principal's {@link Grant}s.
 */

/**
 * What a call does, as grants name it:
 * - `enqueue`: `POST /jobs`, batches and flows (every type in the request must be granted);
 * - `signal`: `POST /jobs/{id}/signals/{name}`;
 * - `control`: cancel, retry, rerun and bulk actions on jobs (see {@link ControlAction});
 * - `operate`: dead-letter queues, recurring schedules and limits (not scoped by type);
 * - `read`: every `GET`.
 */
export type AccessAction = 'enqueue' | 'signal' | 'control' | 'operate' | 'read';

/** The control actions a `control` grant can be narrowed to. */
export type ControlAction = 'cancel' | 'retry' | 'rerun' | 'bulk';

export const ACCESS_ACTIONS: readonly AccessAction[] = ['enqueue', 'signal', 'control', 'operate', 'read'];
export const CONTROL_ACTIONS: readonly ControlAction[] = ['cancel', 'retry', 'rerun', 'bulk'];

/** One permission of one principal. */
export type Grant =
  | {
      action: 'enqueue' | 'signal' | 'read';
      /** The job types it covers. @default every type */
      types?: readonly string[];
    }
  | {
      action: 'control';
      /** @default every type */
      types?: readonly string[];
      /** @default every control action */
      actions?: readonly ControlAction[];
    }
  | { action: 'operate' }
  /** Everything, on every type. */
  | { action: 'admin' };

/**
 * The grants as deployed: the construct writes this document (JSON) at deploy time, and the API
 * reads it once per container at cold start.
 *
 * Principal ids are {@link principalId} keys: an IAM role or user is matched by its account and
 * name (not its path, which an assumed-role ARN does not carry; names are unique in an account).
 */
export interface GrantsDocument {
  v: 1;
  /** Principal id → its grants. */
  principals: Readonly<Record<string, readonly Grant[]>>;
  /**
   * What a principal with no entry gets: one that holds the invoke permission through some other
   * policy. @default [] (nothing: every call answers 403)
   */
  unlisted?: readonly Grant[];
}

/** Where the API gets the grants (a parameter written at deploy; a fixed document locally). */
export interface GrantsSource {
  load(): Promise<GrantsDocument>;
}

/** The caller, as the API sees it. */
export interface Principal {
  /** The key grants are matched by (see {@link principalId}). */
  id: string;
  account: string;
  /** The ARN the caller signed as, unchanged (an assumed role's carries its session). */
  arn: string;
  /** An assumed role's session name, kept for the audit trail. */
  session?: string;
}

/** The parts of a Function URL event's `requestContext.authorizer.iam` that identify the caller. */
export interface IamAuthorizerContext {
  accountId?: string | null;
  userArn?: string | null;
  callerId?: string | null;
}

/**
 * The grant key of an IAM identity:
 * - a role, or a session of it (`arn:aws:sts::A:assumed-role/NAME/SESSION`): `arn:aws:iam::A:role/NAME`;
 * - a user (`arn:aws:iam::A:user/PATH/NAME`): `arn:aws:iam::A:user/NAME`;
 * - the account's root: `arn:aws:iam::A:root`.
 *
 * The partition is kept (`aws`, `aws-cn`, `aws-us-gov`). Returns undefined for anything else
 * (a federated user, a malformed ARN): such a caller matches only `unlisted`.
 *
 * @example
 * principalId('arn:aws:sts::123456789012:assumed-role/billing/i-0abc') // 'arn:aws:iam::123456789012:role/billing'
 */
export function principalId(arn: string): string | undefined {
  const match = /^arn:(aws[a-z-]*):(iam|sts)::(\d{12}):(.+)$/.exec(arn);
  if (!match) return undefined;
  const [, partition, service, account, resource] = match as unknown as [string, string, string, string, string];
  const iam = (rest: string) => `arn:${partition}:iam::${account}:${rest}`;
  if (service === 'sts') {
    const role = /^assumed-role\/([^/]+)\/[^/]+$/.exec(resource);
    return role ? iam(`role/${role[1]}`) : undefined;
  }
  if (resource === 'root') return iam('root');
  const named = /^(role|user)\/(?:[^/]+\/)*([^/]+)$/.exec(resource);
  return named ? iam(`${named[1]}/${named[2]}`) : undefined;
}

/**
 * A caller's ARN shortened for display (the dashboard's timeline, the CLI): the account and the
 * partition are dropped, an assumed role names its session, a role's or user's path is dropped.
 * Anything else (`anonymous`, a federated user, a malformed ARN) is returned unchanged; show the
 * full ARN beside it (a title) when the difference matters.
 *
 * @example
 * shortPrincipal('arn:aws:iam::123456789012:role/billing-service') // 'role/billing-service'
 * shortPrincipal('arn:aws:sts::123456789012:assumed-role/billing/sess') // 'role/billing (session sess)'
 */
export function shortPrincipal(arn: string): string {
  const match = /^arn:aws[a-z-]*:(iam|sts)::(\d+):(.+)$/.exec(arn);
  if (!match) return arn;
  const [, service, account, resource] = match as unknown as [string, string, string, string];
  if (service === 'sts') {
    const role = /^assumed-role\/([^/]+)\/(.+)$/.exec(resource);
    return role ? `role/${role[1]} (session ${role[2]})` : arn;
  }
  if (resource === 'root') return `root (account ${account})`;
  const named = /^(role|user)\/(?:[^/]+\/)*([^/]+)$/.exec(resource);
  return named ? `${named[1]}/${named[2]}` : arn;
}

/** The principal of a Function URL call with `AWS_IAM` auth, or undefined when it carries none. */
export function principalFromAuthorizer(iam: IamAuthorizerContext | null | undefined): Principal | undefined {
  const arn = iam?.userArn;
  if (!arn) return undefined;
  const id = principalId(arn) ?? arn;
  const session = /^arn:[^:]+:sts::\d{12}:assumed-role\/[^/]+\/(.+)$/.exec(arn)?.[1];
  const account = iam.accountId ?? /^arn:[^:]+:[^:]+::(\d{12}):/.exec(arn)?.[1] ?? '';
  return { id, account, arn, ...(session ? { session } : {}) };
}

// ---------------------------------------------------------------- authorization

/** What one call asks for: an action (a control call also names its sub-action) on some job types. */
export interface AccessRequest {
  action: AccessAction;
  /** Required with `action: 'control'`. */
  control?: ControlAction;
  /**
   * The job types the call touches, or `'all'` when it touches every type (a listing with no
   * type filter). Ignored by grants that are not scoped by type (and by `operate`).
   */
  types: readonly string[] | 'all';
}

/** The types an action is granted on: every type, some, or none at all. */
export type TypeScope = { kind: 'all' } | { kind: 'some'; types: ReadonlySet<string> } | { kind: 'none' };

/** Why a call was refused: the action, and the first type not granted (when one is to blame). */
export interface AccessDenial {
  allowed: false;
  action: AccessAction;
  control?: ControlAction;
  /** The first type of the request that is not granted. */
  type?: string;
  /** One sentence naming the action and the type, for the 403's message. */
  reason: string;
}

export type AccessDecision = { allowed: true } | AccessDenial;

/**
 * The grants of a caller: its entry in the document, `unlisted` for a principal with no entry,
 * and nothing for a caller with no IAM identity at all.
 */
export function grantsOf(document: GrantsDocument, principal: Principal | undefined): readonly Grant[] {
  if (!principal) return [];
  return document.principals[principal.id] ?? document.unlisted ?? [];
}

function covers(grant: Grant, action: AccessAction, control: ControlAction | undefined): boolean {
  if (grant.action === 'admin') return true;
  if (grant.action !== action) return false;
  if (grant.action === 'control') return control === undefined || !grant.actions || grant.actions.includes(control);
  return true;
}

/**
 * The types `grants` allow `action` (and `control`) on: `all` when one covering grant names no
 * types (and for `admin` and `operate`), the union of the named types otherwise, `none` when no
 * grant covers the action. The API reads a job's type only when this is `some`.
 */
export function typeScope(grants: readonly Grant[], action: AccessAction, control?: ControlAction): TypeScope {
  const types = new Set<string>();
  let covered = false;
  for (const grant of grants) {
    if (!covers(grant, action, control)) continue;
    covered = true;
    if (grant.action === 'admin' || grant.action === 'operate' || !grant.types) return { kind: 'all' };
    for (const type of grant.types) types.add(type);
  }
  return covered ? { kind: 'some', types } : { kind: 'none' };
}

/** `control (cancel)`, `enqueue`: how a denial names the action. */
export function describeAction(action: AccessAction, control?: ControlAction): string {
  return action === 'control' && control ? `control (${control})` : action;
}

/** Decides a request against a scope (see {@link typeScope}); the first type not in it is named. */
export function decide(scope: TypeScope, request: AccessRequest): AccessDecision {
  const what = describeAction(request.action, request.control);
  const denial = (reason: string, type?: string): AccessDenial => ({
    allowed: false,
    action: request.action,
    ...(request.control ? { control: request.control } : {}),
    ...(type !== undefined ? { type } : {}),
    reason,
  });
  if (scope.kind === 'all') return { allowed: true };
  if (scope.kind === 'none') return denial(`no grant allows ${what}`);
  const granted = [...scope.types].sort();
  if (request.types === 'all') {
    return denial(
      `${what} is granted only on job types ${granted.map((t) => JSON.stringify(t)).join(', ') || '(none)'}; name them`,
    );
  }
  const missing = request.types.find((type) => !scope.types.has(type));
  if (missing !== undefined) return denial(`${what} is not granted on job type ${JSON.stringify(missing)}`, missing);
  return { allowed: true };
}

/**
 * Whether `grants` allow `request`. `admin` covers everything; a `control` grant without
 * `actions` covers every control action; a grant without `types` covers every type.
 *
 * @example
 * authorize([{ action: 'enqueue', types: ['send-email'] }], { action: 'enqueue', types: ['send-email', 'charge'] })
 * // { allowed: false, action: 'enqueue', type: 'charge', reason: 'enqueue is not granted on job type "charge"' }
 */
export function authorize(grants: readonly Grant[], request: AccessRequest): AccessDecision {
  return decide(typeScope(grants, request.action, request.control), request);
}

/** A document that grants `admin` to every caller with an IAM identity (tests, embedders, local platforms). */
export function adminDocument(): GrantsDocument {
  return { v: 1, principals: {}, unlisted: [{ action: 'admin' }] };
}

/** A {@link GrantsSource} of a fixed document. */
export function staticGrants(document: GrantsDocument): GrantsSource {
  return { load: async () => document };
}

// ---------------------------------------------------------------- reading a document

/**
 * A grants document from a parsed value, checking its shape: version 1, principals mapped to
 * lists of grants, each with a known action, `types` a list of strings, `actions` a list of
 * control actions. `fail` is called with the first fault (it throws the caller's error).
 *
 * @example
 * readGrantsDocument(JSON.parse(text), (what) => { throw new Error(`not a grants document: ${what}`); });
 */
export function readGrantsDocument(raw: unknown, fail: (what: string) => never): GrantsDocument {
  if (!isRecord(raw)) return fail('not an object');
  if (raw.v !== 1) fail(`version ${JSON.stringify(raw.v)} (this API reads version 1)`);
  if (!isRecord(raw.principals)) return fail('principals is not an object');
  const principals: Record<string, readonly Grant[]> = {};
  for (const [id, grants] of Object.entries(raw.principals)) {
    principals[id] = grantList(grants, `principals["${id}"]`, fail);
  }
  return {
    v: 1,
    principals,
    ...(raw.unlisted !== undefined ? { unlisted: grantList(raw.unlisted, 'unlisted', fail) } : {}),
  };
}

const GRANT_ACTIONS: readonly string[] = [...ACCESS_ACTIONS, 'admin'];

function grantList(value: unknown, at: string, fail: (what: string) => never): Grant[] {
  if (!Array.isArray(value)) return fail(`${at} is not a list`);
  return value.map((grant, i) => {
    if (!isRecord(grant) || typeof grant.action !== 'string' || !GRANT_ACTIONS.includes(grant.action)) {
      return fail(`${at}[${i}] has no known action (${GRANT_ACTIONS.join(', ')})`);
    }
    const types = grant.types;
    if (types !== undefined && !(Array.isArray(types) && types.every((t) => typeof t === 'string'))) {
      fail(`${at}[${i}].types is not a list of job types`);
    }
    const actions = grant.actions;
    if (
      actions !== undefined &&
      !(Array.isArray(actions) && actions.every((a) => (CONTROL_ACTIONS as readonly unknown[]).includes(a)))
    ) {
      fail(`${at}[${i}].actions is not a list of control actions (${CONTROL_ACTIONS.join(', ')})`);
    }
    return grant as unknown as Grant;
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
