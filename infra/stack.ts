import { Stack, type StackProps } from 'aws-cdk-lib';
import { ArnPrincipal, type IGrantable } from 'aws-cdk-lib/aws-iam';
import type { Construct } from 'constructs';
import {
  accountSyncJob,
  apiCallJob,
  awaitParcelJob,
  echoJob,
  flakyJob,
  fulfilOrderJob,
  packItemJob,
  priceItemJob,
  quoteOrderJob,
  reindexJob,
  sendReceiptJob,
  shipOrderJob,
  shipParcelJob,
  sleepJob,
  tenantSyncJob,
  welcomeEmailJob,
} from '../functions/jobs/catalog';
import type { Grant } from '../shared/core/access';
import { JobPlatform, type JobPlatformProps } from './constructs/job-platform';

export interface OrreryStackProps extends StackProps {
  /** Passed to the {@link JobPlatform}. */
  readonly platform?: JobPlatformProps;
  /**
   * ARNs of IAM roles or users (or `arn:aws:iam::<account>:root`) granted everything on the API
   * (`grantAdmin`): whoever runs the e2e suite, the dashboard or the CLI against this stack. The
   * app takes them from `-c orrery:admins=<arn>,<arn>`. The invoke permission goes on the API
   * function's resource policy, so no identity outside the stack is changed.
   * @default none: every call answers 403 until something is granted
   */
  readonly admins?: readonly string[];
  /**
   * ARNs of IAM roles or users mapped to their scoped grants (`{ action: 'enqueue', types: [...] }`
   * and the like, see `Grant` in shared/core/access.ts), each applied with the matching
   * `JobPlatform.grant*` method. The app takes them from `-c orrery:callers=<json>` or an object
   * under `orrery:callers` in cdk.json.
   * @default none
   *
   * @example
   * new OrreryStack(app, 'Orrery', {
   *   callers: { 'arn:aws:iam::123456789012:role/billing': [{ action: 'enqueue', types: ['send-invoice'] }] },
   * });
   */
  readonly callers?: Readonly<Record<string, readonly Grant[]>>;
}

/**
 * The deployable Orrery stack: one {@link JobPlatform} with the example job types. Copy this
 * file (or add to it) to deploy your own types: a spec and a handler file each.
 */
export class OrreryStack extends Stack {
  readonly platform: JobPlatform;

  constructor(scope: Construct, id: string, props: OrreryStackProps = {}) {
    super(scope, id, { description: 'Orrery serverless job platform', ...props });
    this.platform = new JobPlatform(this, 'Platform', props.platform);
    this.platform.addJobType({ spec: echoJob, entry: 'functions/jobs/echo.ts' });
    this.platform.addJobType({ spec: flakyJob, entry: 'functions/jobs/flaky.ts', concurrency: 2 });
    this.platform.addJobType({ spec: sleepJob, entry: 'functions/jobs/sleep.ts', batchSize: 5 });
    // flow control: a per-tenant concurrency limit, a throttle, a cancel-running singleton, a rate
    // limit, a debounce
    this.platform.addJobType({ spec: tenantSyncJob, entry: 'functions/jobs/tenant-sync.ts' });
    this.platform.addJobType({ spec: apiCallJob, entry: 'functions/jobs/api-call.ts' });
    this.platform.addJobType({ spec: accountSyncJob, entry: 'functions/jobs/account-sync.ts' });
    this.platform.addJobType({ spec: welcomeEmailJob, entry: 'functions/jobs/welcome-email.ts' });
    this.platform.addJobType({ spec: reindexJob, entry: 'functions/jobs/reindex.ts' });
    this.platform.addJobType({ spec: fulfilOrderJob, entry: 'functions/jobs/fulfil-order.ts' });
    this.platform.addJobType({ spec: packItemJob, entry: 'functions/jobs/pack-item.ts' });
    this.platform.addJobType({ spec: shipOrderJob, entry: 'functions/jobs/ship-order.ts' });
    // composition: an invoke and its children, an event waited for and its sender, a batch handler
    this.platform.addJobType({ spec: quoteOrderJob, entry: 'functions/jobs/quote-order.ts' });
    this.platform.addJobType({ spec: priceItemJob, entry: 'functions/jobs/price-item.ts' });
    this.platform.addJobType({ spec: awaitParcelJob, entry: 'functions/jobs/await-parcel.ts' });
    this.platform.addJobType({ spec: shipParcelJob, entry: 'functions/jobs/ship-parcel.ts' });
    this.platform.addJobType({ spec: sendReceiptJob, entry: 'functions/jobs/send-receipt.ts' });
    for (const arn of props.admins ?? []) this.platform.grantAdmin({ grantPrincipal: new ArnPrincipal(arn) });
    for (const [arn, grants] of Object.entries(props.callers ?? {})) {
      const caller = { grantPrincipal: new ArnPrincipal(arn) };
      for (const grant of grants) applyGrant(this.platform, caller, grant);
    }
  }
}

/** Applies one grant with the `JobPlatform.grant*` method of its action. */
function applyGrant(platform: JobPlatform, caller: IGrantable, grant: Grant): void {
  const types = 'types' in grant && grant.types !== undefined ? { types: grant.types } : {};
  switch (grant.action) {
    case 'enqueue':
      platform.grantEnqueue(caller, types);
      return;
    case 'signal':
      platform.grantSignal(caller, types);
      return;
    case 'read':
      platform.grantRead(caller, types);
      return;
    case 'control':
      platform.grantControl(caller, { ...types, ...(grant.actions !== undefined ? { actions: grant.actions } : {}) });
      return;
    case 'operate':
      platform.grantOperate(caller);
      return;
    case 'admin':
      platform.grantAdmin(caller);
      return;
  }
}
