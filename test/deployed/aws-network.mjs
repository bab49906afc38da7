/**
 * The network of the deployed-stack harness: HTTPS requests to AWS hostnames
 * (`*.amazonaws.com`) leave this process as plain HTTP to a local endpoint (the harness's
 * recording proxy in front of moto), with their `Host` header, path and signature unchanged.
 *
 * Why routing by hostname and not `AWS_ENDPOINT_URL_*`: moto's CloudFormation gives queues URLs
 * of the AWS form (`https://sqs.<region>.amazonaws.com/<account>/<name>`), as AWS does, and the
 * SDK sends an SQS call to its QueueUrl's host whenever the client has no explicit `endpoint`
 * (AWS_ENDPOINT_URL_SQS does not count, and each such call logs a warning). So the functions run
 * with exactly the environment they were deployed with, no endpoint variable added, and reach
 * "AWS" at its real hostnames, which this module resolves to the harness.
 *
 * Plain JavaScript: it is loaded by the functions' own runtime processes (plain Node, no
 * TypeScript loader, so the bundles run as Lambda runs them) and by the vitest workers.
 */
import http from 'node:http';
import https from 'node:https';
import { syncBuiltinESMExports } from 'node:module';

const AWS_HOST = /(^|\.)amazonaws\.com$/i;
let installed;

/**
 * Routes every `https.request`/`https.get` to an AWS hostname to `endpoint` (plain HTTP).
 * Idempotent for one endpoint; a second, different endpoint is an error.
 *
 * @param {string} endpoint `http://127.0.0.1:PORT`
 */
export function routeAwsTo(endpoint) {
  if (installed) {
    if (installed === endpoint) return;
    throw new Error(`AWS traffic already routed to ${installed}, not ${endpoint}`);
  }
  const target = new URL(endpoint);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const original = { request: https.request, get: https.get };

  /** `(url | options, [options], [callback])` → `{ options, callback }` as https.request takes them. */
  const normalise = (args) => {
    let [first, second, third] = args;
    let options = {};
    if (typeof first === 'string' || first instanceof URL) {
      const url = new URL(first);
      options = {
        protocol: url.protocol,
        hostname: url.hostname,
        port: url.port,
        path: `${url.pathname}${url.search}`,
      };
      if (typeof second === 'function') third = second;
      else if (second) options = { ...options, ...second };
    } else {
      options = { ...first };
      if (typeof second === 'function') third = second;
    }
    return { options, callback: third };
  };

  const reroute = (method) =>
    function awsRoutedRequest(...args) {
      const { options, callback } = normalise(args);
      const host = String(options.hostname ?? options.host ?? '').replace(/:\d+$/, '');
      if (!AWS_HOST.test(host)) return original[method].apply(this, args);
      const headers = { ...(options.headers ?? {}) };
      const hasHost = Object.keys(headers).some((name) => name.toLowerCase() === 'host');
      if (!hasHost) headers.host = options.port && String(options.port) !== '443' ? `${host}:${options.port}` : host;
      const routed = {
        method: options.method ?? 'GET',
        path: options.path ?? '/',
        headers,
        protocol: 'http:',
        hostname: target.hostname,
        port: target.port,
        agent,
        ...(options.timeout !== undefined ? { timeout: options.timeout } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      };
      return method === 'get' ? http.get(routed, callback) : http.request(routed, callback);
    };

  https.request = reroute('request');
  https.get = reroute('get');
  syncBuiltinESMExports();
  installed = endpoint;
}
