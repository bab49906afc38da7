import { fileURLToPath } from 'node:url';
import { Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { JobPlatform } from 'orrery-jobs/cdk';
import { invoiceJob } from '../jobs/catalog.ts';

/** A file of this app, as an absolute path (so synth works from any working directory). */
const file = (path: string): string => fileURLToPath(new URL(path, import.meta.url));

/** Orrery with this app's one job type; its handler is bundled from `jobs/invoice.ts`. */
export class InvoiceStack extends Stack {
  readonly platform: JobPlatform;

  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);
    this.platform = new JobPlatform(this, 'Jobs', { apiEntry: file('../jobs/api.ts'), retentionDays: 14 });
    this.platform.addJobType({ spec: invoiceJob, entry: file('../jobs/invoice.ts'), concurrency: 5 });
  }
}
