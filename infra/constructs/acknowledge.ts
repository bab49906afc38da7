import { Stack, Validations } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/**
 * Helpers for cdk-nag acknowledgements. cdk-nag 3 reads CDK's own
 * `Validations.of(construct).acknowledge()` metadata, so the constructs do not import cdk-nag.
 * Every acknowledgement carries a reason; docs/infrastructure.md lists them all.
 */

/** Records that `ruleId` was reviewed on `scope` (and everything below it), with the reason. */
export function acknowledge(scope: IConstruct, ruleId: string, reason: string): void {
  if (reason.trim().length < 40) {
    throw new Error(`acknowledgement of ${ruleId} needs a specific reason (got "${reason}")`);
  }
  Validations.of(scope).acknowledge({ id: ruleId, reason });
}

type CfnValue = string | number | boolean | null | undefined | CfnValue[] | { [key: string]: CfnValue };

/**
 * Renders a resolved CloudFormation value the way cdk-nag names findings: `Fn::Join` joined,
 * `Fn::GetAtt` as `<LogicalId.Attr>`, `Ref` as `<LogicalId>`, `${X}` in `Fn::Sub` as `<X>`.
 */
function flatten(value: CfnValue): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value.replace(/\$\{/g, '<').replace(/\}/g, '>');
  if (typeof value !== 'object' || Array.isArray(value)) return JSON.stringify(value);
  const join = value['Fn::Join'];
  if (Array.isArray(join)) {
    const [delimiter, items] = join;
    return Array.isArray(items) ? items.map(flatten).join(String(delimiter)) : '';
  }
  if (value['Fn::Sub'] !== undefined) return flatten(value['Fn::Sub']);
  const getAtt = value['Fn::GetAtt'];
  if (Array.isArray(getAtt)) return `<${flatten(getAtt[0])}.${flatten(getAtt[1])}>`;
  if (value.Ref !== undefined) return `<${flatten(value.Ref)}>`;
  return JSON.stringify(value);
}

/**
 * The cdk-nag finding suffix for a wildcard resource in an IAM policy of `scope`'s stack,
 * e.g. `Resource::<JobTable1234.Arn>/index/*`. Resolve the same token the policy uses.
 */
export function resourceFinding(scope: IConstruct, resource: string): string {
  return `Resource::${flatten(Stack.of(scope).resolve(resource) as CfnValue)}`;
}

/** Reason shared by every function role: X-Ray's write actions accept no resource ARN. */
export const XRAY_WILDCARD_REASON =
  'Active X-Ray tracing needs xray:PutTraceSegments and xray:PutTelemetryRecords, which support no ' +
  'resource-level permissions, so CDK grants them on "*" (AWS documents no narrower form).';
