import { Metrics as Emf, MetricUnit } from '@aws-lambda-powertools/metrics';
import { METRIC_UNITS, METRICS_NAMESPACE, type MetricName, type Metrics, TYPE_DIMENSION } from '../core/metrics';

const UNITS = { Count: MetricUnit.Count, Milliseconds: MetricUnit.Milliseconds } as const;

/**
 * {@link Metrics} as CloudWatch embedded metric format (EMF) lines, written by Powertools for AWS
 * Lambda's Metrics: CloudWatch Logs turns each line into metric data points, so recording costs
 * no request. Values are kept per job type until {@link flush}, which the Lambda entry point calls
 * once per invocation: one EMF line per job type seen (Powertools writes one dimension set per
 * line, and starts a new line past 100 values of a metric).
 *
 * @example
 * const metrics = new PowertoolsMetrics();
 * metrics.add(METRIC.started, 'send-email');
 * metrics.flush(); // {"_aws":{...,"Dimensions":[["type"]],...},"type":"send-email","JobsStarted":1}
 */
export class PowertoolsMetrics implements Metrics {
  private readonly pending = new Map<string, [MetricName, number][]>();
  private readonly emf: Emf;

  /**
   * @param namespace CloudWatch namespace. @default METRICS_NAMESPACE ('Orrery')
   * @param emf The Powertools instance to write with. @default one for `namespace`
   */
  constructor(namespace: string = METRICS_NAMESPACE, emf?: Emf) {
    this.emf = emf ?? new Emf({ namespace });
  }

  add(name: MetricName, type: string, value = 1): void {
    if (!Number.isFinite(value)) return;
    const entries = this.pending.get(type) ?? [];
    entries.push([name, Math.max(0, value)]);
    this.pending.set(type, entries);
  }

  /** Writes what was recorded since the last flush; never throws (a metric is not worth a failed invocation). */
  flush(): void {
    const pending = [...this.pending];
    this.pending.clear();
    for (const [type, entries] of pending) {
      try {
        // The type as the only default dimension (no `service`): it survives the flush Powertools
        // makes by itself at 100 values, which clears the other dimensions.
        this.emf.clearDefaultDimensions();
        this.emf.setDefaultDimensions({ [TYPE_DIMENSION]: type });
        for (const [name, value] of entries) this.emf.addMetric(name, UNITS[METRIC_UNITS[name]], value);
        this.emf.publishStoredMetrics();
      } catch (error) {
        console.error(
          JSON.stringify({ level: 'error', message: 'could not write metrics', type, error: String(error) }),
        );
      }
    }
  }
}
