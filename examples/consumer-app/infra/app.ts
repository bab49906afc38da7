import { Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { orreryApp } from 'orrery-jobs/cdk';
import { InvoiceStack } from './invoice-stack.ts';

// `npx cdk synth -c orrery:bundling=false` synthesizes without bundling (templates only; never deploy so).
const app = orreryApp();
new InvoiceStack(app, 'Invoices');
// Any cdk-nag finding fails the synth (JobPlatform acknowledges its own, each with a reason).
Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
app.synth();
