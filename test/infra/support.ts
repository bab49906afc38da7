import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, type CfnElement, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { onTestFinished } from 'vitest';
import { OrreryStack } from '../../infra/stack';

/** Context that makes every NodejsFunction skip bundling (no esbuild run, no entry imports). */
export const SKIP_BUNDLING = { 'aws:cdk:bundling-stacks': [] };

/** A temporary cloud assembly directory, removed when the current test finishes. */
export function tempOutdir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `orrery-${prefix}-`));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A fresh app whose stacks synthesize without bundling. */
export function testApp(): App {
  return new App({ context: SKIP_BUNDLING });
}

/** The deployable stack with the example job types, synthesized without bundling. */
export function synthOrrery(): { stack: OrreryStack; template: Template } {
  const stack = new OrreryStack(testApp(), 'Orrery');
  return { stack, template: Template.fromStack(stack) };
}

/** A CloudFormation resource as it appears in a synthesized template. */
export interface CfnResourceJson {
  Type: string;
  Properties?: Record<string, unknown>;
}

export interface PolicyStatementJson {
  Effect: 'Allow' | 'Deny';
  Action: string | string[];
  Resource?: unknown;
  Condition?: Record<string, Record<string, unknown>>;
}

/** A property of a synthesized resource; throws (naming it) when absent. */
export function prop<T>(res: CfnResourceJson | undefined, name: string): T {
  const value = res?.Properties?.[name];
  if (value === undefined) throw new Error(`resource has no property ${name}`);
  return value as T;
}

export function logicalId(construct: IConstruct): string {
  const cfn = construct.node.defaultChild ?? construct;
  return Stack.of(construct).getLogicalId(cfn as CfnElement);
}

export function resources(template: Template, type: string): Record<string, CfnResourceJson> {
  return template.findResources(type) as Record<string, CfnResourceJson>;
}

export function resource(template: Template, id: string): CfnResourceJson {
  const found = (template.toJSON() as { Resources: Record<string, CfnResourceJson> }).Resources[id];
  if (!found) throw new Error(`no resource ${id} in template`);
  return found;
}

export function asArray<T>(value: T | T[] | undefined): T[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}

/** Every statement of every AWS::IAM::Policy attached to the role with logical id `roleId`. */
export function roleStatements(template: Template, roleId: string): PolicyStatementJson[] {
  return Object.values(resources(template, 'AWS::IAM::Policy'))
    .filter((policy) => JSON.stringify(policy.Properties?.Roles) === JSON.stringify([{ Ref: roleId }]))
    .flatMap((policy) => prop<{ Statement: PolicyStatementJson[] }>(policy, 'PolicyDocument').Statement);
}

/** Actions a role is allowed, with the resources each statement names (as JSON text). */
export function allowedActions(statements: PolicyStatementJson[]): { action: string; resources: string }[] {
  return statements
    .filter((s) => s.Effect === 'Allow')
    .flatMap((s) => asArray(s.Action).map((action) => ({ action, resources: JSON.stringify(s.Resource) })));
}

/**
 * Renders a CloudFormation value to text with `${Ref:Id}` / `${Id.Attr}` placeholders, so an
 * `Fn::Join`-built JSON environment variable can be parsed and inspected.
 */
export function render(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value && typeof value === 'object') {
    const node = value as Record<string, unknown>;
    if (Array.isArray(node['Fn::Join'])) {
      const [delimiter, parts] = node['Fn::Join'] as [string, unknown[]];
      return parts.map(render).join(delimiter);
    }
    if (typeof node.Ref === 'string') return `\${Ref:${node.Ref}}`;
    if (Array.isArray(node['Fn::GetAtt'])) return `\${${(node['Fn::GetAtt'] as string[]).join('.')}}`;
  }
  throw new Error(`cannot render ${JSON.stringify(value)}`);
}

/** The environment variables of the function with logical id `functionId`. */
export function functionEnv(template: Template, functionId: string): Record<string, unknown> {
  const env = resource(template, functionId).Properties?.Environment as { Variables: Record<string, unknown> };
  return env.Variables;
}
