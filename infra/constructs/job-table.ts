import { RemovalPolicy } from 'aws-cdk-lib';
import {
  type Attribute,
  AttributeType,
  BillingMode,
  ProjectionType,
  Table,
  TableEncryption,
} from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { JOB_TABLE, type KeyType, type TableDefinition } from '../../shared/core/table';

export interface JobTableProps {
  /**
   * The table's shape. Tests may pass another; deployments use the one definition.
   * @default JOB_TABLE from shared/core/table.ts
   */
  readonly definition?: TableDefinition;
  /**
   * What CloudFormation does with the table when it leaves the stack.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * Refuse DeleteTable calls until this is turned off.
   * @default true unless `removalPolicy` is DESTROY
   */
  readonly deletionProtection?: boolean;
}

const ATTRIBUTE_TYPES: Record<KeyType, AttributeType> = { S: AttributeType.STRING, N: AttributeType.NUMBER };

/** Maps a key attribute of the definition to CDK, failing loudly if its type is not declared. */
function keyAttribute(definition: TableDefinition, name: string): Attribute {
  const type = definition.attributes[name];
  if (type === undefined) {
    throw new Error(`table definition: key attribute "${name}" has no entry in "attributes"`);
  }
  return { name, type: ATTRIBUTE_TYPES[type] };
}

/**
 * The job table, built from the single definition in `shared/core/table.ts` (partition key,
 * GSIs with INCLUDE projections, TTL attribute): on-demand billing, point-in-time recovery,
 * encryption with the AWS-managed KMS key, deletion protection.
 *
 * It is an `AWS::DynamoDB::Table` (the `Table` L2), not a global table (`TableV2`): Orrery is
 * single-Region, and cdk-nag's PITR rule inspects `AWS::DynamoDB::Table` only.
 *
 * @example
 * const jobs = new JobTable(this, 'Jobs', { removalPolicy: RemovalPolicy.DESTROY });
 * jobs.table.grantReadData(reporter);
 */
export class JobTable extends Construct {
  readonly table: Table;
  /** Names of the table's global secondary indexes, in definition order. */
  readonly indexNames: string[];

  constructor(scope: Construct, id: string, props: JobTableProps = {}) {
    super(scope, id);
    const definition = props.definition ?? JOB_TABLE;
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    this.table = new Table(this, 'Table', {
      partitionKey: keyAttribute(definition, definition.partitionKey),
      sortKey: keyAttribute(definition, definition.sortKey),
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: TableEncryption.AWS_MANAGED,
      timeToLiveAttribute: definition.ttlAttribute,
      deletionProtection: props.deletionProtection ?? removalPolicy !== RemovalPolicy.DESTROY,
      removalPolicy,
    });
    this.indexNames = definition.indexes.map((index) => index.name);
    for (const index of definition.indexes) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: keyAttribute(definition, index.partitionKey),
        sortKey: keyAttribute(definition, index.sortKey),
        ...(index.include.length > 0
          ? { projectionType: ProjectionType.INCLUDE, nonKeyAttributes: index.include }
          : { projectionType: ProjectionType.KEYS_ONLY }),
      });
    }
  }
}
