import { fileURLToPath } from 'node:url';
import { Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { JobPlatform } from 'orrery-jobs/cdk';
import { collectPaymentJob, invoiceJob } from '../jobs/catalog.ts';

/** A file of this app, as an absolute path (so synth works from any working directory). */
const file = (path: string): string => fileURLToPath(new URL(path, import.meta.url));

/** Orrery with this app's job types; each handler is bundled from its file under `jobs/`. */
export class InvoiceStack extends Stack {
  readonly platform: JobPlatform;

  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);
    this.platform = new JobPlatform(this, 'Jobs', { apiEntry: file('../jobs/api.ts'), retentionDays: 14 });
    this.platform.addJobType({ spec: invoiceJob, entry: file('../jobs/invoice.ts'), concurrency: 5 });
    this.platform.addJobType({ spec: collectPaymentJob, entry: file('../jobs/collect-payment.ts') });
  }
}
