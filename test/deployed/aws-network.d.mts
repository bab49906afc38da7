/** Routes HTTPS requests to `*.amazonaws.com` to `endpoint` (plain HTTP), keeping Host, path and signature. */
export function routeAwsTo(endpoint: string): void;
