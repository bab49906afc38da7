/**
 * Key values must be well-formed Unicode: a fair key is a DynamoDB attribute name (`wf:<key>`,
 * `ws:<key>`) and a string on the type's one shared slot item, and a lone surrogate (which a JSON
 * payload can carry as "\ud800") made that item unreadable on DynamoDB Local (InternalFailure on
 * every later GetItem and UpdateItem), for every fair key of the type.
 */
import { describe, expect, it } from 'vitest';
import { flowKeyProblem, resolveFlowKeys } from '../../shared/core/flow';

describe('key values', () => {
  it('refuses a key value with a lone surrogate', () => {
    expect(flowKeyProblem(JSON.parse('"tenant-\\ud800"'))).toBeDefined();
    expect(flowKeyProblem('\udc00')).toBeDefined();
    // a well-formed pair is fine
    expect(flowKeyProblem('tenant-😀')).toBeUndefined();
  });

  it('refuses it at enqueue, before any slot sees it: DynamoDB cannot store it, and the slot item every tenant shares would be unreadable', () => {
    const limits = [{ limit: 4, fairBy: (p: { t: string }) => p.t }];
    expect(() => resolveFlowKeys(limits as never, JSON.parse('{"t":"tenant-\\ud800"}'))).toThrow(
      expect.objectContaining({ code: 'invalid_fair_key' }),
    );
    expect(resolveFlowKeys(limits as never, { t: 'tenant-😀' })).toEqual(['tenant-😀']);
  });
});
