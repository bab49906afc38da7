import { Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { ADMINS_CONTEXT_KEY, adminsFromContext, CALLERS_CONTEXT_KEY, callersFromContext } from './app-context';
import { orreryApp } from './orrery-app';
import { OrreryStack } from './stack';

const app = orreryApp(); // `-c orrery:bundling=false` synthesizes without bundling
const stackName: unknown = app.node.tryGetContext('orrery:stackName');
new OrreryStack(app, typeof stackName === 'string' && stackName !== '' ? stackName : 'Orrery', {
  // `-c orrery:admins=<arn>,<arn>`: the IAM roles or users granted everything on the API
  admins: adminsFromContext(app.node.tryGetContext(ADMINS_CONTEXT_KEY)),
  // `-c 'orrery:callers={"<arn>":[{"action":"enqueue","types":["echo"]}]}'`: scoped grants
  callers: callersFromContext(app.node.tryGetContext(CALLERS_CONTEXT_KEY)),
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
app.synth();
