/**
 * The part of MLflow's REST API (2.0) a training run needs: experiment and run by name, batched
 * metrics and params, run status, and artifacts through the server's `mlflow-artifacts` proxy.
 * Credentials come from MLflow's own variables (MLFLOW_TRACKING_TOKEN, or
 * MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD).
 */

/** MLflow answers this one tag so a retried activity finds the run it created instead of making another. */
export const ATTUNE_RUN_TAG = 'attune.run';

const REQUEST_TIMEOUT_MS = 10_000;
/** MLflow's log-batch limits: 1000 metrics, 100 params per request. */
const MAX_METRICS_PER_BATCH = 1000;
const MAX_PARAMS_PER_BATCH = 100;
const MAX_PARAM_LENGTH = 6000;

export class MlflowError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
    readonly code: string | null,
  ) {
    super(message);
    this.name = 'MlflowError';
  }
}

export interface MlflowRun {
  runId: string;
  artifactUri: string;
}

export interface MlflowMetric {
  key: string;
  value: number;
  timestamp: number;
  step: number;
}

export class MlflowClient {
  private readonly base: string;

  constructor(
    trackingUri: string,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.base = trackingUri.replace(/\/+$/, '');
  }

  private headers(json: boolean): Record<string, string> {
    const h: Record<string, string> = json ? { 'content-type': 'application/json' } : {};
    const token = this.env.MLFLOW_TRACKING_TOKEN;
    const user = this.env.MLFLOW_TRACKING_USERNAME;
    if (token) h.authorization = `Bearer ${token}`;
    else if (user)
      h.authorization = `Basic ${Buffer.from(`${user}:${this.env.MLFLOW_TRACKING_PASSWORD ?? ''}`).toString('base64')}`;
    return h;
  }

  private async call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const url = `${this.base}/api/2.0/mlflow/${path}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers: this.headers(body !== undefined),
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      throw new MlflowError(`MLflow ${url}: ${(error as Error).message}`, null, null);
    }
    const text = await response.text();
    if (!response.ok) {
      let code: string | null = null;
      try {
        code = (JSON.parse(text) as { error_code?: string }).error_code ?? null;
      } catch {
        // Not MLflow's JSON error: the status and text say what went wrong.
      }
      throw new MlflowError(`MLflow ${url}: HTTP ${response.status}: ${text.slice(0, 300)}`, response.status, code);
    }
    return (text ? JSON.parse(text) : {}) as T;
  }

  /** The experiment's id, created when it does not exist yet (a concurrent creation is not an error). */
  async experimentId(name: string): Promise<string> {
    const byName = async () => {
      try {
        const r = await this.call<{ experiment: { experiment_id: string } }>(
          'GET',
          `experiments/get-by-name?experiment_name=${encodeURIComponent(name)}`,
        );
        return r.experiment.experiment_id;
      } catch (error) {
        if (error instanceof MlflowError && error.code === 'RESOURCE_DOES_NOT_EXIST') return null;
        throw error;
      }
    };
    const found = await byName();
    if (found !== null) return found;
    try {
      return (await this.call<{ experiment_id: string }>('POST', 'experiments/create', { name })).experiment_id;
    } catch (error) {
      const again = error instanceof MlflowError && error.code === 'RESOURCE_ALREADY_EXISTS' ? await byName() : null;
      if (again === null) throw error;
      return again;
    }
  }

  /** The run tagged with this Attune run name in the experiment, or null. */
  async findRun(experimentId: string, runName: string): Promise<MlflowRun | null> {
    const r = await this.call<{ runs?: { info: { run_id: string; artifact_uri: string } }[] }>('POST', 'runs/search', {
      experiment_ids: [experimentId],
      filter: `tags.\`${ATTUNE_RUN_TAG}\` = '${runName.replace(/'/g, "\\'")}'`,
      max_results: 1,
      order_by: ['attributes.start_time ASC'],
    });
    const info = r.runs?.[0]?.info;
    return info ? { runId: info.run_id, artifactUri: info.artifact_uri } : null;
  }

  async createRun(experimentId: string, runName: string, startTime: number): Promise<MlflowRun> {
    const r = await this.call<{ run: { info: { run_id: string; artifact_uri: string } } }>('POST', 'runs/create', {
      experiment_id: experimentId,
      run_name: runName,
      start_time: startTime,
      tags: [
        { key: ATTUNE_RUN_TAG, value: runName },
        { key: 'mlflow.source.name', value: 'attune' },
      ],
    });
    return { runId: r.run.info.run_id, artifactUri: r.run.info.artifact_uri };
  }

  async logParams(runId: string, params: Record<string, string>): Promise<void> {
    const entries = Object.entries(params).map(([key, value]) => ({ key, value: value.slice(0, MAX_PARAM_LENGTH) }));
    for (let i = 0; i < entries.length; i += MAX_PARAMS_PER_BATCH)
      await this.call('POST', 'runs/log-batch', { run_id: runId, params: entries.slice(i, i + MAX_PARAMS_PER_BATCH) });
  }

  /**
   * Metrics in batches. MLflow keys a metric value by (key, timestamp, step, value): the same
   * value logged again with the same timestamp is absorbed, so a repeated step stays one value.
   */
  async logMetrics(runId: string, metrics: MlflowMetric[]): Promise<void> {
    for (let i = 0; i < metrics.length; i += MAX_METRICS_PER_BATCH)
      await this.call('POST', 'runs/log-batch', {
        run_id: runId,
        metrics: metrics.slice(i, i + MAX_METRICS_PER_BATCH),
      });
  }

  async finishRun(runId: string, endTime: number): Promise<void> {
    await this.call('POST', 'runs/update', { run_id: runId, status: 'FINISHED', end_time: endTime });
  }

  async metricHistory(runId: string, key: string): Promise<{ value: number; step: number; timestamp: number }[]> {
    const r = await this.call<{ metrics?: { value: number; step: number; timestamp: number }[] }>(
      'GET',
      `metrics/get-history?run_id=${encodeURIComponent(runId)}&metric_key=${encodeURIComponent(key)}`,
    );
    return r.metrics ?? [];
  }

  /**
   * Uploads one file under the run's artifacts through the server's artifact proxy. Runs whose
   * artifacts live elsewhere (a server started with --no-serve-artifacts) are named in the error.
   */
  async uploadArtifact(run: MlflowRun, path: string, content: Uint8Array | string): Promise<void> {
    const match = /^mlflow-artifacts:(?:\/\/[^/]*)?\/(.*)$/.exec(run.artifactUri);
    if (!match)
      throw new MlflowError(
        `MLflow run ${run.runId}: artifacts at ${run.artifactUri} are not served by the tracking server (start it with --serve-artifacts)`,
        null,
        null,
      );
    const url = `${this.base}/api/2.0/mlflow-artifacts/artifacts/${match[1]}/${path}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'PUT',
        headers: this.headers(false),
        body: content,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS * 3),
      });
    } catch (error) {
      throw new MlflowError(`MLflow ${url}: ${(error as Error).message}`, null, null);
    }
    if (!response.ok)
      throw new MlflowError(
        `MLflow ${url}: HTTP ${response.status}: ${(await response.text()).slice(0, 300)}`,
        response.status,
        null,
      );
  }
}
