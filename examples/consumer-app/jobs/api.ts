/** The enqueue API's Lambda entry (the JobPlatform's `apiEntry`): the API of this app's job types. */
import { createLambdaApiHandler } from 'orrery-jobs/runtime';
import { catalog } from './catalog.ts';

export const handler = createLambdaApiHandler(catalog);
