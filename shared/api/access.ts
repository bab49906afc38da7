import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import {
  type AccessDecision,
  type AccessRequest,
  adminDocument,
  type ControlAction,
  decide,
  type Grant,
  type GrantsDocument,
  type GrantsSource,
  grantsOf,
  type IamAuthorizerContext,
  type Principal,
  principalFromAuthorizer,
  staticGrants,
  type TypeScope,
  typeScope,
} from '../core/access';
import { ACCESS_METRIC, type Metrics, NO_TYPE } from '../core/metrics';
import { DependencyError, ForbiddenError } from '../errors';
import type { Logger } from '../logger';
import type { CallContext, HttpRequest, RouteAccess } from './http';

/**
 * The 403 for a job the route found (on its own read, or refused by its write) to be of a type
 * outside the call's scope, though the access check's earlier read found it inside: another job
 * of the same id in between. Undefined when the type is inside.
 *
 * @example
 * const refusal = scopeRefusal(call, { action: 'read', types: [job.type] });
 * if (refusal) throw refusal;
 */
export function scopeRefusal(
  call: { by?: string; scope?: TypeScope },
  request: AccessRequest,
): ForbiddenError | undefined {
  if (!call.scope || call.scope.kind === 'all') return undefined;
  const decision = decide(call.scope, request);
  return decision.allowed ? undefined : new ForbiddenError(`${call.by ?? 'anonymous'}: ${decision.reason}`, decision);
}

/**
 * The job types two grants both cover: a call that needs several (a bulk cancel needs `bulk` and
 * `cancel`) may act only where every one of them reaches.
 */
export function intersectScopes(a: TypeScope, b: TypeScope): TypeScope {
  if (a.kind === 'all') return b;
  if (b.kind === 'all') return a;
  if (a.kind === 'none' || b.kind === 'none') return { kind: 'none' };
  return { kind: 'some', types: new Set([...a.types].filter((type) => b.types.has(type))) };
}

/** Who may call the API, and for what (see docs/security.md). */
export interface ApiAccess {
  /** The grants document, loaded once per container (on the first call) and kept. */
  grants: GrantsSource;
  /**
   * What a call with no IAM identity gets: only a Function URL without `AWS_IAM` auth delivers
   * one (the construct never deploys that; local platforms without SigV4 do).
   * @default [] (nothing: every such call answers 403)
   */
  anonymous?: readonly Grant[];
}

/**
 * Everyone may do everything: `admin` for every principal and for calls with no IAM identity.
 * For tests and embedders that guard the API some other way.
 */
export function allowEveryone(): ApiAccess {
  return { grants: staticGrants(adminDocument()), anonymous: [{ action: 'admin' }] };
}

/** Access by a fixed document (a caller with no IAM identity gets `anonymous`, default nothing). */
export function accessFrom(document: GrantsDocument, anonymous: readonly Grant[] = []): ApiAccess {
  return { grants: staticGrants(document), anonymous };
}

/** Nobody may do anything (what an API built without `access` does). */
export function denyEveryone(): ApiAccess {
  return accessFrom({ v: 1, principals: {} });
}

/** The caller of a Function URL event, from `requestContext.authorizer.iam` (none without `AWS_IAM`). */
export function principalOf(event: APIGatewayProxyEventV2): Principal | undefined {
  const context = event.requestContext as { authorizer?: { iam?: IamAuthorizerContext | null } } | undefined;
  return principalFromAuthorizer(context?.authorizer?.iam);
}

/** How the audit names a caller: its ARN as signed (an assumed role's carries its session). */
export function actorOf(principal: Principal | undefined): string {
  return principal?.arn ?? 'anonymous';
}

/**
 * The audit of an operator action that succeeded: one structured log line (`operator action`,
 * with who, what, on which job, schedule or key, and when) and the `OperatorActions` metric. The job's
 * own record is written by the action (`controls` on the job).
 */
export function auditOperatorAction(
  deps: { log: Logger; metrics: Metrics },
  entry: {
    action: string;
    principal: Principal | undefined;
    params: Record<string, string>;
    /** The answer's body and the request's: the job type is the first `type` either names. */
    bodies: readonly (string | undefined)[];
    at: number;
  },
): void {
  let type: string | undefined;
  for (const body of entry.bodies) {
    try {
      const parsed = body ? (JSON.parse(body) as { type?: unknown } | null) : undefined;
      if (typeof parsed?.type === 'string') type ??= parsed.type;
    } catch {
      // not JSON: no type to name
    }
  }
  deps.log.info('operator action', {
    action: entry.action,
    by: actorOf(entry.principal),
    ...(entry.principal?.session ? { session: entry.principal.session } : {}),
    ...(entry.params.id !== undefined ? { jobId: entry.params.id } : {}),
    ...(entry.params.name !== undefined ? { schedule: entry.params.name } : {}),
    ...(entry.params.key !== undefined ? { key: entry.params.key } : {}),
    ...(type !== undefined ? { type } : {}),
    at: new Date(entry.at).toISOString(),
  });
  deps.metrics.add(ACCESS_METRIC.operatorAction, type ?? NO_TYPE);
}

/**
 * The one access check of the API: every route's method declares a {@link RouteAccess}, and the
 * handler calls {@link AccessGate.check} before the route runs, so a refused call writes nothing.
 */
export interface AccessGate {
  check(input: {
    principal: Principal | undefined;
    access: RouteAccess | undefined;
    request: HttpRequest;
    params: Record<string, string>;
  }): Promise<CallContext>;
}

export function createAccessGate(deps: { access: ApiAccess; log: Logger; metrics: Metrics }): AccessGate {
  let loading: Promise<GrantsDocument> | undefined;
  const document = (): Promise<GrantsDocument> => {
    loading ??= deps.access.grants.load().catch((error: unknown) => {
      loading = undefined; // the next call tries again
      throw new DependencyError('could not load the access grants', error);
    });
    return loading;
  };

  const refuse = (principal: Principal | undefined, decision: Exclude<AccessDecision, { allowed: true }>): never => {
    deps.log.warn('call forbidden', {
      principal: actorOf(principal),
      action: decision.action,
      ...(decision.control ? { control: decision.control } : {}),
      ...(decision.type !== undefined ? { type: decision.type } : {}),
    });
    deps.metrics.add(ACCESS_METRIC.forbidden, decision.type ?? NO_TYPE);
    throw new ForbiddenError(`${actorOf(principal)}: ${decision.reason}`, decision);
  };

  return {
    async check({ principal, access, request, params }) {
      if (access === 'public') return { principal, scope: { kind: 'all' } };
      const grants = principal ? grantsOf(await document(), principal) : (deps.access.anonymous ?? []);
      if (!access) {
        return refuse(principal, { allowed: false, action: 'read', reason: 'this route has no access rule' });
      }
      const controls: readonly (ControlAction | undefined)[] =
        access.control === undefined
          ? [undefined]
          : typeof access.control === 'function'
            ? access.control(request)
            : access.control;
      let scope: TypeScope = { kind: 'all' };
      let types: readonly string[] | 'all' | undefined;
      for (const control of controls) {
        const granted = typeScope(grants, access.action, control);
        // the types are looked up (a body parsed, a job read) only for a grant scoped by type
        if (granted.kind === 'some' && types === undefined)
          types = access.types ? await access.types(request, params) : [];
        const decision = decide(granted, {
          action: access.action,
          ...(control ? { control } : {}),
          types: types ?? [],
        });
        if (!decision.allowed) return refuse(principal, decision);
        scope = intersectScopes(scope, granted);
      }
      return { principal, scope };
    },
  };
}
