/**
 * The queues' resource policies as AWS would hold them, for the IAM check (iam-proof.ts). moto's
 * CloudFormation reports `AWS::SQS::QueuePolicy` resources complete without applying them, so
 * the harness resolves each one from the deployed (flat, patched) template: `Ref` of a queue is
 * its URL (its physical id), `Fn::GetAtt [Queue, Arn]` its ARN, pseudo parameters their values,
 * `Fn::Join` and `Fn::Sub` joined. Anything else is an error: a policy half-resolved would be
 * evaluated wrongly.
 */
import type { Template } from './assembly';

/** One resolved `AWS::SQS::QueuePolicy`: its document and the queues it is attached to. */
export interface QueuePolicy {
  stackName: string;
  logicalId: string;
  /** ARNs of the queues the policy is attached to. */
  queueArns: string[];
  document: { Version?: string; Statement: Record<string, unknown>[] };
}

export interface ResolveContext {
  stackName: string;
  region: string;
  account: string;
  /** Logical id → physical id, as ListStackResources answers. */
  physical: ReadonlyMap<string, string>;
  template: Template;
}

/** The queue policies of a deployed stack, resolved. */
export function queuePoliciesOf(ctx: ResolveContext): QueuePolicy[] {
  const policies: QueuePolicy[] = [];
  for (const [logicalId, resource] of Object.entries(ctx.template.Resources)) {
    if (resource.Type !== 'AWS::SQS::QueuePolicy') continue;
    const properties = resource.Properties ?? {};
    const queues = resolveValue(properties.Queues, ctx, logicalId);
    if (!Array.isArray(queues) || queues.some((q) => typeof q !== 'string')) {
      throw new Error(`${ctx.stackName}/${logicalId}: Queues did not resolve to queue URLs`);
    }
    policies.push({
      stackName: ctx.stackName,
      logicalId,
      queueArns: (queues as string[]).map((url) => queueArnOfUrl(url, ctx.region)),
      document: resolveValue(properties.PolicyDocument, ctx, logicalId) as QueuePolicy['document'],
    });
  }
  return policies;
}

/** `https://sqs.<region>.amazonaws.com/<account>/<name>` → `arn:aws:sqs:<region>:<account>:<name>` */
export function queueArnOfUrl(url: string, region: string): string {
  const [, account, name] = new URL(url).pathname.split('/');
  if (!account || !name) throw new Error(`not a queue URL: ${url}`);
  return `arn:aws:sqs:${region}:${account}:${name}`;
}

function resolveValue(value: unknown, ctx: ResolveContext, where: string): unknown {
  if (Array.isArray(value)) return value.map((item) => resolveValue(item, ctx, where));
  if (value === null || typeof value !== 'object') return value;
  const node = value as Record<string, unknown>;
  const keys = Object.keys(node);
  if (keys.length === 1) {
    const [key] = keys as [string];
    const argument = node[key];
    if (key === 'Ref') return resolveRef(String(argument), ctx, where);
    if (key === 'Fn::GetAtt') {
      const [id, attribute] = Array.isArray(argument) ? argument : String(argument).split('.');
      return resolveGetAtt(String(id), String(attribute), ctx, where);
    }
    if (key === 'Fn::Join') {
      const [separator, parts] = argument as [string, unknown[]];
      return (resolveValue(parts, ctx, where) as unknown[]).map(String).join(separator);
    }
    if (key === 'Fn::Sub') {
      const [text, vars] = Array.isArray(argument) ? argument : [argument, {}];
      const bound = resolveValue(vars, ctx, where) as Record<string, unknown>;
      return String(text).replace(/\$\{(?!!)([^}]+)\}/g, (_whole, token: string) => {
        if (token in bound) return String(bound[token]);
        const dot = token.indexOf('.');
        return String(
          dot > 0
            ? resolveGetAtt(token.slice(0, dot), token.slice(dot + 1), ctx, where)
            : resolveRef(token, ctx, where),
        );
      });
    }
    if (key.startsWith('Fn::')) throw new Error(`${ctx.stackName}/${where}: cannot resolve ${key}`);
  }
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, resolveValue(v, ctx, where)]));
}

function resolveRef(name: string, ctx: ResolveContext, where: string): string {
  const pseudo: Record<string, string> = {
    'AWS::Region': ctx.region,
    'AWS::AccountId': ctx.account,
    'AWS::Partition': 'aws',
    'AWS::URLSuffix': 'amazonaws.com',
    'AWS::StackName': ctx.stackName,
  };
  const value = pseudo[name] ?? ctx.physical.get(name);
  if (value === undefined) throw new Error(`${ctx.stackName}/${where}: cannot resolve Ref ${name}`);
  return value;
}

function resolveGetAtt(id: string, attribute: string, ctx: ResolveContext, where: string): string {
  const type = ctx.template.Resources[id]?.Type;
  const physical = ctx.physical.get(id);
  if (type === 'AWS::SQS::Queue' && physical) {
    if (attribute === 'Arn') return queueArnOfUrl(physical, ctx.region);
    if (attribute === 'QueueUrl') return physical;
    if (attribute === 'QueueName') return physical.slice(physical.lastIndexOf('/') + 1);
  }
  throw new Error(`${ctx.stackName}/${where}: cannot resolve Fn::GetAtt ${id}.${attribute}`);
}
