/**
 * The run's record of AWS calls (.orrery/deployed/aws-calls.json), the input of the IAM check:
 * who the principals were (function, role, assumed-role session), each principal's distinct
 * calls (service, action, resources, region, the IAM context seen, how many, with which
 * answers), the calls that failed, and every call in order.
 */
import type { AwsCallRecord, Principal } from './recording-proxy';

export interface DistinctCall {
  service: string;
  action: string;
  region: string;
  resources: string[];
  count: number;
  /** Answers by HTTP status. */
  statuses: Record<string, number>;
  errorCodes?: string[];
  /** The distinct IAM contexts seen (at most 5). */
  contexts?: Record<string, unknown>[];
}

export interface CallSummary {
  run: { region: string; account: string; writtenAt: string; calls: number };
  principals: (Principal & { accessKeyIds: string[] })[];
  /** Distinct calls per principal name (function logical id, `e2e-caller`, ...), per `via`. */
  byPrincipal: Record<string, Record<string, DistinctCall[]>>;
  /** Distinct calls that were answered 4xx/5xx. */
  failedCalls: {
    principal: string;
    via: string;
    action: string;
    resources: string[];
    status: number;
    errorCode?: string;
    count: number;
  }[];
  calls: readonly AwsCallRecord[];
}

export function summariseCalls(
  calls: readonly AwsCallRecord[],
  principals: ReadonlyMap<string, Principal>,
  run: { region: string; account: string },
): CallSummary {
  const byName = new Map<string, Principal & { accessKeyIds: string[] }>();
  for (const [accessKeyId, principal] of principals) {
    const key = `${principal.name}|${principal.via}`;
    const entry = byName.get(key) ?? { ...principal, accessKeyIds: [] };
    entry.accessKeyIds.push(accessKeyId);
    byName.set(key, entry);
  }

  const distinct = new Map<string, DistinctCall & { principal: string; via: string }>();
  const failed = new Map<string, CallSummary['failedCalls'][number]>();
  for (const call of calls) {
    const resources = [...call.resources].sort();
    const key = JSON.stringify([call.principal, call.via, call.service, call.action, call.region, resources]);
    const entry = distinct.get(key) ?? {
      principal: call.principal,
      via: call.via,
      service: call.service,
      action: call.action,
      region: call.region,
      resources,
      count: 0,
      statuses: {},
    };
    entry.count += 1;
    entry.statuses[call.status] = (entry.statuses[call.status] ?? 0) + 1;
    if (call.errorCode) entry.errorCodes = [...new Set([...(entry.errorCodes ?? []), call.errorCode])];
    if (call.context) {
      const contexts = entry.contexts ?? [];
      const text = JSON.stringify(call.context);
      if (contexts.length < 5 && !contexts.some((c) => JSON.stringify(c) === text)) contexts.push(call.context);
      entry.contexts = contexts;
    }
    distinct.set(key, entry);
    if (call.status >= 400) {
      const failKey = JSON.stringify([call.principal, call.via, call.action, resources, call.status, call.errorCode]);
      const failure = failed.get(failKey) ?? {
        principal: call.principal,
        via: call.via,
        action: call.action,
        resources,
        status: call.status,
        ...(call.errorCode ? { errorCode: call.errorCode } : {}),
        count: 0,
      };
      failure.count += 1;
      failed.set(failKey, failure);
    }
  }

  const byPrincipal: CallSummary['byPrincipal'] = {};
  for (const { principal, via, ...call } of distinct.values()) {
    const forPrincipal = byPrincipal[principal] ?? {};
    byPrincipal[principal] = forPrincipal;
    const list = forPrincipal[via] ?? [];
    forPrincipal[via] = list;
    list.push(call);
  }
  for (const vias of Object.values(byPrincipal)) {
    for (const list of Object.values(vias))
      list.sort((a, b) => `${a.service}${a.action}`.localeCompare(`${b.service}${b.action}`));
  }
  return {
    run: { ...run, writtenAt: new Date().toISOString(), calls: calls.length },
    principals: [...byName.values()],
    byPrincipal,
    failedCalls: [...failed.values()],
    calls,
  };
}
