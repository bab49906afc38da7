import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { OrreryStack } from './stack';

const app = new App();
// `-c orrery:bundling=false` synthesizes without bundling (the CLI refuses `aws:` context keys).
if (String(app.node.tryGetContext('orrery:bundling')) === 'false') app.node.setContext('aws:cdk:bundling-stacks', []);
const stackName: unknown = app.node.tryGetContext('orrery:stackName');
new OrreryStack(app, typeof stackName === 'string' && stackName !== '' ? stackName : 'Orrery');
Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
app.synth();
