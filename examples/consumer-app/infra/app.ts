import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { InvoiceStack } from './invoice-stack.ts';

const app = new App();
new InvoiceStack(app, 'Invoices');
// Any cdk-nag finding fails the synth (JobPlatform acknowledges its own, each with a reason).
Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
app.synth();
