import { Aws, Duration, RemovalPolicy } from 'aws-cdk-lib';
import { type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { UPLOAD_RETENTION_DAYS } from '../../shared/core/blobs';
import { JOURNAL_RETENTION_DAYS } from '../../shared/core/journal';
import { acknowledge, resourceFinding } from './acknowledge';

export interface PayloadBucketProps {
  /**
   * The bucket's name. Named rather than generated so that its ARN is made of pseudo parameters
   * only, and a job type's nested stack names the same resources without a cross-stack reference.
   */
  readonly bucketName: string;
  /** Days a finished job is kept (the platform's `retentionDays`). */
  readonly retentionDays: number;
  /** @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * The S3 bucket that keeps values too large for a DynamoDB item: payloads over 256 KiB, uploads
 * (`POST /uploads`), results and step results over 64 KiB (shared/core/blobs.ts). Encrypted
 * (SSE-S3), no public access, TLS only, objects owned by the bucket owner (no ACLs).
 *
 * Objects are written once and never read after their job and journal are gone, so one lifecycle
 * rule expires them when the longest-lived item that may refer to them has expired: a journal
 * entry (JOURNAL_RETENTION_DAYS after it is written) or a job item (retentionDays after it ends),
 * whichever is later. Uploads (`u/…`) expire a day after they are made: an enqueue reads one and
 * keeps a copy of its own (inline, or under `p/…`), so no job ever refers to an upload.
 *
 * @example
 * const payloads = new PayloadBucket(this, 'Payloads', { bucketName: 'orrery-123456789012-eu-west-1-pl', retentionDays: 30 });
 * payloads.grantWorker(worker.handler);
 */
export class PayloadBucket extends Construct {
  readonly bucket: Bucket;
  /** The bucket's ARN, from its name and the partition (no reference to the bucket resource). */
  readonly bucketArn: string;
  /** Days after which every object expires. */
  readonly expirationDays: number;

  constructor(scope: Construct, id: string, props: PayloadBucketProps) {
    super(scope, id);
    this.expirationDays = JOURNAL_RETENTION_DAYS + props.retentionDays;
    this.bucketArn = `arn:${Aws.PARTITION}:s3:::${props.bucketName}`;
    this.bucket = new Bucket(this, 'Bucket', {
      bucketName: props.bucketName,
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
      lifecycleRules: [
        {
          id: 'expire-with-retention',
          expiration: Duration.days(this.expirationDays),
          abortIncompleteMultipartUploadAfter: Duration.days(1),
        },
        // an upload is read once, at its enqueue, whose job keeps a copy of its own: no job
        // refers to it (its presigned URL could PUT it again), so it goes after a day
        { id: 'expire-uploads', prefix: 'u/', expiration: Duration.days(UPLOAD_RETENTION_DAYS) },
      ],
    });
    acknowledge(
      this.bucket,
      'AwsSolutions-S1',
      'The payload bucket holds job payloads and results that the functions alone read and write, under ' +
        'random keys; CloudTrail data events can log access where needed, so no access-log bucket is made.',
    );
  }

  /**
   * The API's access: it writes large payloads (`p/…`) and signal payloads (`g/…`), signs upload URLs (a presigned PUT is
   * authorised by the signer's `s3:PutObject` on `u/…`), reads uploads back at enqueue (HEAD and
   * GET are both `s3:GetObject`), and lists the bucket so that a missing upload answers 404 (a
   * 400 `payload_ref_not_found`) rather than 403.
   */
  grantApi(grantee: IGrantable): void {
    this.grant(grantee, ['s3:PutObject'], ['p/*', 'u/*', 'g/*']);
    this.grant(grantee, ['s3:GetObject'], ['u/*']);
    this.grantList(grantee);
  }

  /**
   * A worker's access: it reads offloaded payloads (`p/…`, `u/…`), step results (`s/…`) and
   * signals (`g/…`), writes results (`r/…`) and step results (`s/…`), and lists the bucket so that
   * a missing object reads as missing (404), not as a denial (403).
   */
  grantWorker(grantee: IGrantable): void {
    this.grant(grantee, ['s3:GetObject'], ['p/*', 'u/*', 's/*', 'g/*', 'r/*']);
    this.grant(grantee, ['s3:PutObject'], ['r/*', 's/*']);
    this.grantList(grantee);
  }

  private grant(grantee: IGrantable, actions: string[], prefixes: string[]): void {
    const resources = prefixes.map((prefix) => `${this.bucketArn}/${prefix}`);
    grantee.grantPrincipal.addToPrincipalPolicy(new PolicyStatement({ actions, resources }));
    const role = grantee.grantPrincipal;
    if (!(role instanceof Construct)) return;
    prefixes.forEach((prefix, i) => {
      acknowledge(
        role,
        `AwsSolutions-IAM5[${resourceFinding(this, resources[i] as string)}]`,
        `Objects of the payload bucket under the prefix ${prefix}: keys are made per job and value ` +
          '(shared/core/blobs.ts), so no fixed object ARN can name them; the prefix names one kind of value.',
      );
    });
  }

  private grantList(grantee: IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({ actions: ['s3:ListBucket'], resources: [this.bucketArn] }),
    );
  }
}

/**
 * The payload bucket's name for a queue-name prefix: `<prefix>-<account>-<region>-pl`, lower
 * case, at most 63 characters (a prefix of 32, a 12-digit account, a 14-character region).
 */
export function payloadBucketName(prefix: string): string {
  return `${prefix.toLowerCase()}-${Aws.ACCOUNT_ID}-${Aws.REGION}-pl`;
}
