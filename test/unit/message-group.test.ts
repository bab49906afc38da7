/**
 * The SQS message group of a job (shared/core/message-group.ts): which key names it, the form SQS
 * takes (1 to 128 printable ASCII characters), and, as properties over any key a job may have,
 * that it is always such a group, the same for the same job, and different for different keys.
 * Also which job types' messages carry one, and the spec check of `sqsFairQueue`.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { flowKeyProblem, MAX_FLOW_KEY_LENGTH, WHOLE_TYPE_KEY } from '../../shared/core/flow';
import { defineJobType, JOB_TYPE_PATTERN } from '../../shared/core/job-type';
import {
  fairQueueTypes,
  groupKeysOf,
  MESSAGE_GROUP_PATTERN,
  messageGroupOf,
  sqsFairQueueProblem,
  usesFairQueue,
} from '../../shared/core/message-group';
import { ConfigError } from '../../shared/errors';

const hashed = (type: string, key: string) => `${type}#${createHash('sha256').update(key, 'utf8').digest('base64url')}`;

describe('messageGroupOf', () => {
  it("names the group by the first keyed concurrency key, prefixed with the job's type", () => {
    expect(messageGroupOf({ type: 'tenant-sync', flowKeys: ['acme', '*'] })).toBe('tenant-sync:acme');
    // the whole type's key names no tenant: the next keyed limit does
    expect(messageGroupOf({ type: 'tenant-sync', flowKeys: [WHOLE_TYPE_KEY, 'eu-west'] })).toBe('tenant-sync:eu-west');
  });

  it('falls back to the singleton key, then the throttle key, skipping whole-type keys', () => {
    expect(messageGroupOf({ type: 'sync', flowKeys: ['*'], singletonKey: 'acct-1', throttleKey: 'k' })).toBe(
      'sync:acct-1',
    );
    expect(messageGroupOf({ type: 'sync', singletonKey: '*', throttleKey: 'api-key-9' })).toBe('sync:api-key-9');
    expect(messageGroupOf({ type: 'sync', flowKeys: ['*'], singletonKey: '*', throttleKey: '*' })).toBeUndefined();
    expect(messageGroupOf({ type: 'echo' })).toBeUndefined();
  });

  it('hashes a key SQS would refuse (a space, Unicode, over 128 characters) into `<type>#<SHA-256, base64url>`', () => {
    for (const key of ['Zürich AG', 'a b', 'x'.repeat(200), '租户', 'tab\u00a0nbsp']) {
      const group = messageGroupOf({ type: 'tenant-sync', flowKeys: [key] });
      expect(group).toBe(hashed('tenant-sync', key));
      expect(group).toMatch(MESSAGE_GROUP_PATTERN);
    }
    // the longest type and a long key: 40 + 1 + 43 characters
    const longType = `a${'b'.repeat(39)}`;
    expect(messageGroupOf({ type: longType, flowKeys: ['k'.repeat(256)] })).toHaveLength(84);
    // a plain group of exactly 128 characters is kept; one more is hashed
    const edge = 'k'.repeat(128 - 'sync:'.length);
    expect(messageGroupOf({ type: 'sync', flowKeys: [edge] })).toBe(`sync:${edge}`);
    expect(messageGroupOf({ type: 'sync', flowKeys: [`${edge}k`] })).toBe(hashed('sync', `${edge}k`));
  });

  it('keeps only the keys that name a group, for a hand-off by id and type', () => {
    expect(groupKeysOf({ type: 't', flowKeys: ['a'], throttleKey: 'b' })).toEqual({
      flowKeys: ['a'],
      throttleKey: 'b',
    });
    expect(groupKeysOf({ type: 't' })).toEqual({});
  });
});

describe('messageGroupOf, over any key a job may carry', () => {
  /** A job type name, as `defineJobType` accepts it. */
  const typeName = fc.stringMatching(JOB_TYPE_PATTERN);
  /** Any key an enqueue accepts (flowKeyProblem): 1 to 256 characters, any but control characters. */
  const key = fc
    .oneof(
      fc.string({ minLength: 1, maxLength: MAX_FLOW_KEY_LENGTH, unit: 'grapheme' }),
      fc.string({ minLength: 1, maxLength: MAX_FLOW_KEY_LENGTH, unit: 'binary' }),
      fc.stringMatching(/^[\x21-\x7e]{1,140}$/),
    )
    .filter((k) => k.length <= MAX_FLOW_KEY_LENGTH && flowKeyProblem(k) === undefined && k !== WHOLE_TYPE_KEY);

  it('is always a group SQS takes: 1 to 128 printable ASCII characters', () => {
    fc.assert(
      fc.property(typeName, key, (type, k) => {
        const group = messageGroupOf({ type, flowKeys: [k] });
        expect(group).toMatch(MESSAGE_GROUP_PATTERN);
        expect(group?.startsWith(type)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('is the same for the same job, whichever option carries the key', () => {
    fc.assert(
      fc.property(typeName, key, (type, k) => {
        const group = messageGroupOf({ type, flowKeys: [k] });
        expect(messageGroupOf({ type, flowKeys: [k] })).toBe(group);
        expect(messageGroupOf({ type, singletonKey: k })).toBe(group);
        expect(messageGroupOf({ type, throttleKey: k })).toBe(group);
      }),
    );
  });

  it('differs for different keys of one type, and for one key of different types', () => {
    fc.assert(
      fc.property(typeName, key, key, (type, a, b) => {
        fc.pre(a !== b);
        expect(messageGroupOf({ type, flowKeys: [a] })).not.toBe(messageGroupOf({ type, flowKeys: [b] }));
      }),
      { numRuns: 500 },
    );
    fc.assert(
      fc.property(typeName, typeName, key, (t1, t2, k) => {
        fc.pre(t1 !== t2);
        expect(messageGroupOf({ type: t1, flowKeys: [k] })).not.toBe(messageGroupOf({ type: t2, flowKeys: [k] }));
      }),
    );
  });

  it('never lets a plain key pass for the hashed form of another', () => {
    // the type is followed by ':' in the plain form and by '#' in the hashed one
    fc.assert(
      fc.property(typeName, key, (type, k) => {
        const group = messageGroupOf({ type, flowKeys: [k] }) ?? '';
        const mark = group.charAt(type.length);
        expect(mark === ':' ? `${type}:${k}` : hashed(type, k)).toBe(group);
      }),
    );
  });
});

describe('which job types send their messages in a group', () => {
  const payload = z.object({ tenant: z.string() });
  const keyed = defineJobType({ type: 'keyed', payload, concurrency: [{ limit: 2, key: (p) => p.tenant }] });
  const total = defineJobType({ type: 'total', payload, concurrency: [{ limit: 10 }] });
  const single = defineJobType({ type: 'single', payload, singleton: { mode: 'queue' } });
  const paced = defineJobType({
    type: 'paced',
    payload,
    throttle: { limit: 5, periodSeconds: 1, key: (p) => p.tenant },
  });
  const off = defineJobType({
    type: 'off',
    payload,
    concurrency: [{ limit: 2, key: (p) => p.tenant }],
    sqsFairQueue: false,
  });
  const plain = defineJobType({ type: 'plain', payload });

  it('by default every type that keys its jobs, and none that cannot; `sqsFairQueue: false` turns it off', () => {
    expect([keyed, total, single, paced, off, plain].map(usesFairQueue)).toEqual([
      true,
      false,
      true,
      true,
      false,
      false,
    ]);
    expect([...fairQueueTypes([keyed, total, single, paced, off, plain])].sort()).toEqual(['keyed', 'paced', 'single']);
    expect(off.sqsFairQueue).toBe(false);
    expect(plain).not.toHaveProperty('sqsFairQueue');
  });

  it('groups a type whose only limit is shared fairly by its fair key: the tenant the issue names', () => {
    const fair = defineJobType({ type: 'fair', payload, concurrency: [{ limit: 10, fairBy: (p) => p.tenant }] });
    expect(usesFairQueue(fair)).toBe(true);
    expect([...fairQueueTypes([fair, total])]).toEqual(['fair']);
    expect(sqsFairQueueProblem({ ...fair, sqsFairQueue: true })).toBeUndefined();
    expect(messageGroupOf({ type: 'fair', flowKeys: ['acme'] })).toBe('fair:acme');
  });

  it('refuses a value that is not a boolean, and `true` on a type with no key to name the group by', () => {
    expect(sqsFairQueueProblem({ type: 't', sqsFairQueue: 'yes' as never })).toMatch(/true or false/);
    expect(sqsFairQueueProblem({ type: 't', sqsFairQueue: true, concurrency: [{}] })).toMatch(/needs a key/);
    expect(sqsFairQueueProblem({ type: 't', sqsFairQueue: false })).toBeUndefined();
    expect(() => defineJobType({ type: 'plain', payload, sqsFairQueue: true })).toThrow(ConfigError);
    expect(() => defineJobType({ type: 'plain', payload, sqsFairQueue: 1 as never })).toThrow(
      'job type "plain": sqsFairQueue must be true or false',
    );
    expect(
      defineJobType({ type: 'keyed', payload, singleton: { mode: 'skip' }, sqsFairQueue: true }).sqsFairQueue,
    ).toBe(true);
  });
});
