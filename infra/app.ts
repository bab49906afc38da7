import { Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { orreryApp } from './orrery-app';
import { OrreryStack } from './stack';

const app = orreryApp(); // `-c orrery:bundling=false` synthesizes without bundling
const stackName: unknown = app.node.tryGetContext('orrery:stackName');
// `-c orrery:admins=<arn>,<arn>`: the IAM roles or users granted everything on the API
const admins: unknown = app.node.tryGetContext('orrery:admins');
new OrreryStack(app, typeof stackName === 'string' && stackName !== '' ? stackName : 'Orrery', {
  admins: typeof admins === 'string' ? admins.split(',').filter((arn) => arn.trim() !== '') : [],
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
app.synth();
