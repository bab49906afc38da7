import { RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { JobTable } from '../../infra/constructs/job-table';
import { JOB_TABLE } from '../../shared/core/table';
import { resources, synthOrrery, testApp } from './support';

const { template } = synthOrrery();

describe('job table', () => {
  it('is one on-demand table with point-in-time recovery, AWS-managed KMS encryption and deletion protection', () => {
    template.resourceCountIs('AWS::DynamoDB::Table', 1);
    template.resourceCountIs('AWS::DynamoDB::GlobalTable', 0);
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      // SSEEnabled true = KMS with the AWS-managed key (aws/dynamodb); no customer key.
      SSESpecification: { SSEEnabled: true, KMSMasterKeyId: Match.absent() },
      DeletionProtectionEnabled: true,
    });
  });

  it('is retained when removed from the stack by default', () => {
    template.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
  });

  it('has the partition and sort keys, attributes and TTL attribute of JOB_TABLE', () => {
    const table = Object.values(resources(template, 'AWS::DynamoDB::Table'))[0];
    expect(table?.Properties?.KeySchema).toEqual([
      { AttributeName: JOB_TABLE.partitionKey, KeyType: 'HASH' },
      { AttributeName: JOB_TABLE.sortKey, KeyType: 'RANGE' },
    ]);
    const expectedAttributes = Object.entries(JOB_TABLE.attributes).map(([AttributeName, AttributeType]) => ({
      AttributeName,
      AttributeType,
    }));
    expect(table?.Properties?.AttributeDefinitions).toEqual(expect.arrayContaining(expectedAttributes));
    expect(table?.Properties?.AttributeDefinitions).toHaveLength(expectedAttributes.length);
    expect(table?.Properties?.TimeToLiveSpecification).toEqual({
      AttributeName: JOB_TABLE.ttlAttribute,
      Enabled: true,
    });
  });

  it('has exactly the GSIs of JOB_TABLE, with their INCLUDE projections', () => {
    const table = Object.values(resources(template, 'AWS::DynamoDB::Table'))[0];
    const expected = JOB_TABLE.indexes.map((index) => ({
      IndexName: index.name,
      KeySchema: [
        { AttributeName: index.partitionKey, KeyType: 'HASH' },
        { AttributeName: index.sortKey, KeyType: 'RANGE' },
      ],
      Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: index.include },
    }));
    expect(table?.Properties?.GlobalSecondaryIndexes).toEqual(expected);
  });

  it('projects into its indexes only attributes that never change, so a state change writes no index entry', () => {
    const table = Object.values(resources(template, 'AWS::DynamoDB::Table'))[0];
    const indexes = table?.Properties?.GlobalSecondaryIndexes as {
      IndexName: string;
      KeySchema: { AttributeName: string }[];
      Projection: { NonKeyAttributes: string[] };
    }[];
    expect(indexes.map((i) => i.IndexName)).toEqual(['byType', 'byTypeState', 'byDue']);
    for (const index of indexes) {
      for (const mutable of ['state', 'runAt', 'attempts', 'finishedAt', 'updatedAt', 'leaseExpiresAt'])
        expect(index.Projection.NonKeyAttributes).not.toContain(mutable);
    }
    // the sparse state index sorts on the byType sort key the create writes (no copy of it)
    expect(indexes[1]?.KeySchema.map((k) => k.AttributeName)).toEqual(['gsi2pk', 'gsi1sk']);
  });

  it('can be destroyed with the stack, which turns deletion protection off by default', () => {
    const stack = new Stack(testApp(), 'T');
    new JobTable(stack, 'Jobs', { removalPolicy: RemovalPolicy.DESTROY });
    const t = Template.fromStack(stack);
    t.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Delete' });
    t.hasResourceProperties('AWS::DynamoDB::Table', { DeletionProtectionEnabled: false });
  });

  it('keeps deletion protection configurable on its own', () => {
    const stack = new Stack(testApp(), 'T');
    new JobTable(stack, 'Jobs', { removalPolicy: RemovalPolicy.DESTROY, deletionProtection: true });
    Template.fromStack(stack).hasResourceProperties('AWS::DynamoDB::Table', { DeletionProtectionEnabled: true });
  });

  it('rejects a definition whose key attribute has no declared type', () => {
    const stack = new Stack(testApp(), 'T');
    const broken = { ...JOB_TABLE, attributes: { pk: 'S' as const, sk: 'S' as const } };
    expect(() => new JobTable(stack, 'Jobs', { definition: broken })).toThrow(/key attribute "gsi1pk" has no entry/);
  });
});
