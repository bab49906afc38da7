import { describe, expect, it } from 'vitest';
import { principalFromAuthorizer, principalId, shortPrincipal } from '../../shared/core/access';

describe('principalId', () => {
  it.each([
    ['arn:aws:sts::123456789012:assumed-role/billing/i-0abc', 'arn:aws:iam::123456789012:role/billing'],
    ['arn:aws:iam::123456789012:role/service/billing', 'arn:aws:iam::123456789012:role/billing'],
    ['arn:aws:iam::123456789012:role/billing', 'arn:aws:iam::123456789012:role/billing'],
    ['arn:aws:iam::123456789012:user/ops/alice', 'arn:aws:iam::123456789012:user/alice'],
    ['arn:aws:iam::123456789012:root', 'arn:aws:iam::123456789012:root'],
    ['arn:aws-cn:sts::123456789012:assumed-role/r/s', 'arn:aws-cn:iam::123456789012:role/r'],
  ])('%s → %s', (arn, id) => {
    expect(principalId(arn)).toBe(id);
  });

  it.each([
    'arn:aws:sts::123456789012:federated-user/bob',
    'arn:aws:iam::12345:role/short-account',
    'not an arn',
    'arn:aws:iam::123456789012:group/admins',
  ])('has no key for %s', (arn) => {
    expect(principalId(arn)).toBeUndefined();
  });
});

describe('principalFromAuthorizer', () => {
  it('keeps the session of an assumed role for the audit', () => {
    expect(
      principalFromAuthorizer({
        accountId: '123456789012',
        userArn: 'arn:aws:sts::123456789012:assumed-role/billing/lambda-session',
        callerId: 'AROAEXAMPLE:lambda-session',
      }),
    ).toEqual({
      id: 'arn:aws:iam::123456789012:role/billing',
      account: '123456789012',
      arn: 'arn:aws:sts::123456789012:assumed-role/billing/lambda-session',
      session: 'lambda-session',
    });
  });

  it('has no principal without an IAM authorizer context', () => {
    expect(principalFromAuthorizer(undefined)).toBeUndefined();
    expect(principalFromAuthorizer({ accountId: '123456789012' })).toBeUndefined();
  });
});

describe('shortPrincipal', () => {
  it('drops the partition and account of a role or user, and its path', () => {
    expect(shortPrincipal('arn:aws:iam::123:role/billing-service')).toBe('role/billing-service');
    expect(shortPrincipal('arn:aws:iam::123456789012:role/team/ops/oncall')).toBe('role/oncall');
    expect(shortPrincipal('arn:aws-us-gov:iam::123456789012:user/ci/deployer')).toBe('user/deployer');
  });

  it('names the session of an assumed role', () => {
    expect(shortPrincipal('arn:aws:sts::123:assumed-role/billing/sess')).toBe('role/billing (session sess)');
    expect(shortPrincipal('arn:aws:sts::123456789012:assumed-role/ci/alice@example.com')).toBe(
      'role/ci (session alice@example.com)',
    );
  });

  it("keeps the account of the account's root", () => {
    expect(shortPrincipal('arn:aws:iam::123456789012:root')).toBe('root (account 123456789012)');
  });

  it('returns anything else unchanged', () => {
    for (const other of [
      'anonymous',
      'arn:aws:sts::123456789012:federated-user/bob',
      'arn:aws:s3:::bucket',
      'role/billing',
      '',
    ]) {
      expect(shortPrincipal(other)).toBe(other);
    }
  });
});
