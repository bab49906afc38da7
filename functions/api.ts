import { createLambdaApiHandler } from '../shared/api/lambda';
import { catalog } from './jobs/catalog';

/** Enqueue API behind the Lambda Function URL (payload format 2.0). */
export const handler = createLambdaApiHandler(catalog);
