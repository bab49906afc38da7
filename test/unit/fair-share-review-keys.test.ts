/**
 * Review: a fair key is a DynamoDB attribute name (`wf:<key>`, `ws:<key>`) and a string on the
 * type's one shared slot item; a key that is not well-formed UTF-16 (a lone surrogate, which a
 * JSON payload can carry as "\ud800") made that item unreadable on DynamoDB Local
 * (InternalFailure on every later GetItem and UpdateItem), for every fair key of the type.
 */
import { describe, expect, it } from 'vitest';
import { flowKeyProblem } from '../../shared/core/flow';

describe('fair share review: key values', () => {
  it('refuses a key value with a lone surrogate', () => {
    expect(flowKeyProblem(JSON.parse('"tenant-\\ud800"'))).toBeDefined();
    expect(flowKeyProblem('\udc00')).toBeDefined();
    // a well-formed pair is fine
    expect(flowKeyProblem('tenant-😀')).toBeUndefined();
  });
});
