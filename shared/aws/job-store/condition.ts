/**
 * Compiles a rule of `shared/core/claim-rule.ts` (clauses as data) into a DynamoDB condition
 * expression with its attribute names and values: the same clauses `claimVerdict` evaluates, so
 * the store's condition and the domain's verdict cannot say different things. Pure.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import {
  CLAIM_PARAMETERS,
  type ClaimAttribute,
  type ClaimParameter,
  type Clause,
  type RuleValueKind,
} from '../../core/claim-rule';
import { N, S } from '../attributes';

/** A condition expression with the names and values it uses. */
export interface CompiledCondition {
  expression: string;
  names: Record<string, string>;
  values: Record<string, AttributeValue>;
}

/** Attributes whose names are reserved words in DynamoDB expressions, written as `#name`. */
const RESERVED: ReadonlySet<ClaimAttribute> = new Set(['state', 'type']);

function attributeValue(kind: RuleValueKind, value: string | number): AttributeValue {
  if (kind === 'text') return S(String(value));
  return kind === 'time' ? S(new Date(value).toISOString()) : N(Number(value));
}

/**
 * The condition `rule` states for a claim of `type` at `now`: every `state` value as `:<state>`,
 * every parameter as `:<parameter>`, reserved attribute names as `#<name>`. A nested `all` or
 * `any` of more than one clause is parenthesised; the top level is not.
 */
export function compileCondition(rule: Clause, input: { type: string; now: number }): CompiledCondition {
  const names: Record<string, string> = {};
  const values: Record<string, AttributeValue> = {};
  const name = (attribute: ClaimAttribute): string => {
    if (!RESERVED.has(attribute)) return attribute;
    names[`#${attribute}`] = attribute;
    return `#${attribute}`;
  };
  const parameter = (p: ClaimParameter): string => {
    const { kind, of } = CLAIM_PARAMETERS[p];
    values[`:${p}`] = attributeValue(kind, of(input));
    return `:${p}`;
  };
  const state = (s: string): string => {
    values[`:${s}`] = S(s);
    return `:${s}`;
  };
  const text = (clause: Clause, nested: boolean): string => {
    switch (clause.kind) {
      case 'exists':
        return `attribute_exists(${name(clause.attribute)})`;
      case 'absent':
        return `attribute_not_exists(${name(clause.attribute)})`;
      case 'compare': {
        const right = 'parameter' in clause.to ? parameter(clause.to.parameter) : name(clause.to.attribute);
        return `${name(clause.attribute)} ${clause.op} ${right}`;
      }
      case 'state-in': {
        const [only, ...more] = clause.states;
        if (only !== undefined && more.length === 0) return `${name('state')} = ${state(only)}`;
        return `${name('state')} IN (${clause.states.map(state).join(', ')})`;
      }
      case 'all':
      case 'any': {
        const parts = clause.clauses.map((c) => text(c, true));
        const joined = parts.join(clause.kind === 'all' ? ' AND ' : ' OR ');
        return nested && parts.length > 1 ? `(${joined})` : joined;
      }
    }
  };
  const expression = text(rule, false);
  return { expression, names, values };
}
