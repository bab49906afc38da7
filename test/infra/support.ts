import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, type CfnElement, NestedStack, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { onTestFinished } from 'vitest';
import { OrreryStack } from '../../infra/stack';

/** Context that makes every NodejsFunction skip bundling (no esbuild run, no entry imports). */
export const SKIP_BUNDLING = { 'aws:cdk:bundling-stacks': [] };

/** Asset metadata names each nested stack's template file (as the CDK CLI enables it). */
export const ASSET_METADATA = { 'aws:cdk:enable-asset-metadata': true };

/** A temporary cloud assembly directory, removed when the current test finishes. */
export function tempOutdir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `orrery-${prefix}-`));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A fresh app whose stacks synthesize without bundling. */
export function testApp(): App {
  return new App({ context: { ...SKIP_BUNDLING, ...ASSET_METADATA } });
}

/** The deployable stack with the example job types, synthesized without bundling, seen flat. */
export function synthOrrery(): { stack: OrreryStack; template: Template } {
  const stack = new OrreryStack(testApp(), 'Orrery');
  return { stack, template: flatTemplate(stack) };
}

type Json = unknown;

/**
 * The stack and its nested stacks (each job type's) as one template, as if they were one stack:
 * a nested stack's resources keep their logical ids behind a `<nested stack resource id>/`
 * prefix (what {@link logicalId} gives for a construct inside it), its parameters are replaced
 * by the values the parent passes, and the parent's `Outputs.X` of it by the output's value.
 * Assertions then read the same whichever stack a resource lives in.
 */
export function flatTemplate(stack: Stack): Template {
  const app = stack.node.root as App;
  const assembly = app.synth();
  const artifact = assembly.getStackByName(stack.stackName);
  const read = (file: string) =>
    JSON.parse(readFileSync(join(assembly.directory, file), 'utf8')) as Record<string, Json>;
  return Template.fromJSON(flatten(read(artifact.templateFile), '', read) as Record<string, Json>);
}

function flatten(template: Record<string, Json>, prefix: string, read: (file: string) => Record<string, Json>): Json {
  const resources = (template.Resources ?? {}) as Record<string, CfnResourceJson & { Metadata?: Record<string, Json> }>;
  const nestedOutputs = new Map<string, Record<string, Json>>();
  const merged: Record<string, Json> = {};
  for (const [id, res] of Object.entries(resources)) {
    if (res.Type !== 'AWS::CloudFormation::Stack') continue;
    const file = res.Metadata?.['aws:asset:path'];
    if (typeof file !== 'string') throw new Error(`nested stack ${id} has no asset path (enable asset metadata)`);
    const nested = read(file);
    const params = (res.Properties?.Parameters ?? {}) as Record<string, Json>;
    const substituted = substitute(nested, params) as Record<string, Json>;
    const flat = flatten(substituted, `${prefix}${id}/`, read) as Record<string, Json>;
    Object.assign(merged, flat.Resources as Record<string, Json>);
    const outputs = (flat.Outputs ?? {}) as Record<string, { Value: Json }>;
    nestedOutputs.set(id, Object.fromEntries(Object.entries(outputs).map(([k, v]) => [k, v.Value])));
  }
  const rename = (value: Json): Json => {
    if (Array.isArray(value)) return value.map(rename);
    if (!value || typeof value !== 'object') return value;
    const node = value as Record<string, Json>;
    if (typeof node.Ref === 'string' && resources[node.Ref]) return { Ref: `${prefix}${node.Ref}` };
    const getAtt = node['Fn::GetAtt'];
    if (Array.isArray(getAtt) && typeof getAtt[0] === 'string' && resources[getAtt[0]]) {
      const [target, attribute] = getAtt as [string, string];
      if (attribute.startsWith('Outputs.')) return nestedOutputs.get(target)?.[attribute.slice(8)] ?? value;
      return { 'Fn::GetAtt': [`${prefix}${target}`, attribute] };
    }
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, rename(v)]));
  };
  for (const [id, res] of Object.entries(resources)) {
    if (res.Type === 'AWS::CloudFormation::Stack') continue;
    merged[`${prefix}${id}`] = rename(res);
  }
  return { ...template, Resources: merged, ...(template.Outputs ? { Outputs: rename(template.Outputs) } : {}) };
}

/** Replaces `{ Ref: <parameter> }` by the value the parent passes. */
function substitute(value: Json, params: Record<string, Json>): Json {
  if (Array.isArray(value)) return value.map((v) => substitute(v, params));
  if (!value || typeof value !== 'object') return value;
  const node = value as Record<string, Json>;
  if (typeof node.Ref === 'string' && params[node.Ref] !== undefined) return params[node.Ref];
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, substitute(v, params)]));
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

/** The logical id of a construct's resource, as {@link flatTemplate} names it (nested ones prefixed). */
export function logicalId(construct: IConstruct): string {
  const cfn = construct.node.defaultChild ?? construct;
  const stack = Stack.of(construct);
  return `${nestedPrefix(stack)}${stack.getLogicalId(cfn as CfnElement)}`;
}

function nestedPrefix(stack: Stack): string {
  if (!(stack instanceof NestedStack) || !stack.nestedStackResource) return '';
  const parent = Stack.of(stack.nestedStackResource);
  return `${nestedPrefix(parent)}${parent.getLogicalId(stack.nestedStackResource)}/`;
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
