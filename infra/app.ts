import { Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { orreryApp } from './orrery-app';
import { OrreryStack } from './stack';

const app = orreryApp(); // `-c orrery:bundling=false` synthesizes without bundling
const stackName: unknown = app.node.tryGetContext('orrery:stackName');
new OrreryStack(app, typeof stackName === 'string' && stackName !== '' ? stackName : 'Orrery');
Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
app.synth();
