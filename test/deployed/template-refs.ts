/**
 * Rewriting references inside a CloudFormation template: `Ref`, `Fn::GetAtt` (both forms),
 * `Fn::Sub` tokens, `Fn::If` and `Condition` names, `Fn::FindInMap` map names, `DependsOn`.
 * The moto patches (moto-patches.ts) are built from these.
 */

/** `Fn::Sub` tokens: `${Name}` or `${Name.Attr}`; `${!Literal}` is not a token. */
const SUB_TOKEN = /\$\{(?!!)([^}]+)\}/g;

/** True for `AWS::Region`, `AWS::AccountId`, ... */
export function isPseudoParameter(name: string): boolean {
  return name.startsWith('AWS::');
}

/** A reference found in a template: to a logical id, with the attribute for GetAtt. */
export type Reference = { kind: 'Ref'; id: string } | { kind: 'GetAtt'; id: string; attribute: string };

/** What to put in place of a reference: a new expression, or undefined to keep it. */
export type ReferenceRewriter = (reference: Reference) => unknown | undefined;

function getAttParts(value: unknown): [string, string] | undefined {
  if (Array.isArray(value) && typeof value[0] === 'string') {
    const attribute = value[1];
    return typeof attribute === 'string' ? [value[0], attribute] : undefined;
  }
  if (typeof value === 'string') {
    const dot = value.indexOf('.');
    return dot > 0 ? [value.slice(0, dot), value.slice(dot + 1)] : undefined;
  }
  return undefined;
}

/**
 * Returns a copy of `value` with each `Ref` and `Fn::GetAtt` (and each `Fn::Sub` token) passed
 * to `rewrite`. A token in a `Fn::Sub` string whose replacement is not a plain string is bound
 * to a new variable of the Sub's variable map, so any expression may replace any reference.
 */
export function rewriteReferences(value: unknown, rewrite: ReferenceRewriter): unknown {
  if (Array.isArray(value)) return value.map((item) => rewriteReferences(item, rewrite));
  if (value === null || typeof value !== 'object') return value;
  const node = value as Record<string, unknown>;
  const keys = Object.keys(node);
  if (keys.length === 1 && typeof node.Ref === 'string') {
    const replaced = rewrite({ kind: 'Ref', id: node.Ref });
    return replaced === undefined ? { Ref: node.Ref } : replaced;
  }
  if (keys.length === 1 && 'Fn::GetAtt' in node) {
    const parts = getAttParts(node['Fn::GetAtt']);
    if (parts) {
      const replaced = rewrite({ kind: 'GetAtt', id: parts[0], attribute: parts[1] });
      if (replaced !== undefined) return replaced;
    }
    return { 'Fn::GetAtt': rewriteReferences(node['Fn::GetAtt'], rewrite) };
  }
  if (keys.length === 1 && 'Fn::Sub' in node) return rewriteSub(node['Fn::Sub'], rewrite);
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, rewriteReferences(v, rewrite)]));
}

function rewriteSub(sub: unknown, rewrite: ReferenceRewriter): unknown {
  const [text, givenVars] = Array.isArray(sub) ? [sub[0], sub[1]] : [sub, undefined];
  if (typeof text !== 'string') return { 'Fn::Sub': rewriteReferences(sub, rewrite) };
  const vars: Record<string, unknown> = {};
  for (const [name, expr] of Object.entries((givenVars ?? {}) as Record<string, unknown>)) {
    vars[name] = rewriteReferences(expr, rewrite);
  }
  let counter = 0;
  const rewritten = text.replace(SUB_TOKEN, (whole, inner: string) => {
    if (inner in vars || isPseudoParameter(inner)) return whole;
    const dot = inner.indexOf('.');
    const reference: Reference =
      dot > 0
        ? { kind: 'GetAtt', id: inner.slice(0, dot), attribute: inner.slice(dot + 1) }
        : { kind: 'Ref', id: inner };
    const replaced = rewrite(reference);
    if (replaced === undefined) return whole;
    if (typeof replaced === 'string') return replaced.replace(/\$\{/g, '${!');
    const simple = simpleReference(replaced);
    if (simple) return `\${${simple}}`;
    let name: string;
    do name = `OrreryHarnessVar${counter++}`;
    while (name in vars || text.includes(name));
    vars[name] = replaced;
    return `\${${name}}`;
  });
  return Object.keys(vars).length > 0 ? { 'Fn::Sub': [rewritten, vars] } : { 'Fn::Sub': rewritten };
}

/** `{Ref: X}` → `X`, `{Fn::GetAtt: [X, A]}` → `X.A` (what a Sub token can say directly). */
function simpleReference(expr: unknown): string | undefined {
  if (expr === null || typeof expr !== 'object' || Array.isArray(expr)) return undefined;
  const node = expr as Record<string, unknown>;
  if (Object.keys(node).length !== 1) return undefined;
  if (typeof node.Ref === 'string') return node.Ref;
  const parts = getAttParts(node['Fn::GetAtt']);
  return parts ? `${parts[0]}.${parts[1]}` : undefined;
}

/** Every reference in `value` (including Sub tokens), for checks. */
export function collectReferences(value: unknown): Reference[] {
  const found: Reference[] = [];
  rewriteReferences(value, (reference) => {
    found.push(reference);
    return undefined;
  });
  return found;
}

/** Renames condition names in `Fn::If` and `{ Condition: name }` nodes. */
export function renameConditions(value: unknown, rename: (name: string) => string): unknown {
  if (Array.isArray(value)) return value.map((item) => renameConditions(item, rename));
  if (value === null || typeof value !== 'object') return value;
  const node = value as Record<string, unknown>;
  const keys = Object.keys(node);
  if (keys.length === 1 && Array.isArray(node['Fn::If']) && typeof node['Fn::If'][0] === 'string') {
    const [condition, ...rest] = node['Fn::If'] as [string, ...unknown[]];
    return { 'Fn::If': [rename(condition), ...rest.map((item) => renameConditions(item, rename))] };
  }
  if (keys.length === 1 && typeof node.Condition === 'string') return { Condition: rename(node.Condition) };
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, renameConditions(v, rename)]));
}

/** Renames map names in `Fn::FindInMap`. */
export function renameMappings(value: unknown, rename: (name: string) => string): unknown {
  if (Array.isArray(value)) return value.map((item) => renameMappings(item, rename));
  if (value === null || typeof value !== 'object') return value;
  const node = value as Record<string, unknown>;
  if (Object.keys(node).length === 1 && Array.isArray(node['Fn::FindInMap'])) {
    const [map, ...rest] = node['Fn::FindInMap'] as unknown[];
    return {
      'Fn::FindInMap': [
        typeof map === 'string' ? rename(map) : renameMappings(map, rename),
        ...rest.map((item) => renameMappings(item, rename)),
      ],
    };
  }
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, renameMappings(v, rename)]));
}

/** `DependsOn` as a list. */
export function dependsOnList(dependsOn: unknown): string[] {
  if (typeof dependsOn === 'string') return [dependsOn];
  return Array.isArray(dependsOn) ? dependsOn.filter((d): d is string => typeof d === 'string') : [];
}
