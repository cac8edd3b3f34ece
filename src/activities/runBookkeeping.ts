import { ApplicationFailure } from '@temporalio/activity';
import { runMetricsKey } from '../artifacts/keys.js';
import type { ArtifactStore } from '../artifacts/store.js';
import { parseStepRecords, withStepRecord, type StepMetricsRecord } from '../core/runMetrics.js';
import { loadScenarioLibrary } from '../scenarios/library.js';
import { firstTokenAt } from '../vllm/adapters.js';
import type { NcclRendezvous } from '../core/training/fullWeightsTransport.js';
import type { TrainerEndpoint } from '../trainer/trainerClient.js';
import { versionStep } from '../vllm/adapters.js';
import { checkpointReload } from '../vllm/checkpointReload.js';
import { publishFullWeights, type FullWeightsPause } from '../vllm/fullWeights.js';
import type { FullWeightsTransport } from '../vllm/fullWeightsTransport.js';
import { ncclTransfer } from '../vllm/ncclTransfer.js';
import { loadLoraAdapter } from '../vllm/load.js';
import { listedWithVersion, policyHeaders, probeAndUnload } from '../vllm/served.js';

export interface PublishInput {
  mode: 'trainer' | 'vllm';
  /** OpenAI base URL (…/v1) that serves the versions. */
  policyBaseURL: string;
  /** Variable holding the key of that server: the trainer's token (trainer.tokenEnv) when the trainer serves. */
  apiKeyEnv: string;
  version: string;
  /** Adapter directory returned by the trainer (vLLM mode), or the full model directory (`weights: full`). */
  exportPath: string | null;
  /** vLLM mode: `full` reloads the served model's weights in place (absent: a LoRA adapter is loaded). */
  weights?: 'full';
  /** `weights: full`: the served model's name, which the first-token probe asks for. */
  servedModel?: string;
  /**
   * vLLM mode: keep only the run's newest `keep` versions loaded (`runName@step`), unloading older
   * ones once this version serves. Absent: unload nothing (runs started before unloading existed).
   */
  unload?: { runName: string; keep: number };
  /**
   * `weights: full` sent over NCCL (`training.publish.transport: nccl`): the trainer that sends them,
   * the run whose step `version` names, and the group. Absent: vLLM reloads `exportPath`.
   */
  nccl?: { trainer: TrainerEndpoint; runName: string; rendezvous: NcclRendezvous };
  /**
   * `weights: full`: `keep` freezes the calls in flight across the reload (in-flight updates,
   * `training.maxStaleness` >= 1; see publishFullWeights). Absent: `wait`, they finish first.
   */
  pause?: FullWeightsPause;
}

export interface PublishResult {
  version: string;
  /** Epoch ms of the first token the new version served (vLLM mode); null when not measured. */
  firstTokenAtMs: number | null;
  /**
   * Milliseconds from this publish attempt's start (it learns of the committed step) to the new
   * version's first token, both read on the publishing host's clock; null when not measured.
   * Absent in results recorded before it was measured.
   */
  publishMs?: number | null;
  /**
   * Milliseconds vLLM took to take the weights alone: the adapter's load request, or a full-weight
   * reload from pause to resume. Absent in results recorded before it was measured.
   */
  loadMs?: number;
  unloaded: string[];
  /** Unloads vLLM refused or that did not reach it: reported by the run, not fatal. */
  unloadFailures: string[];
}

/** `firstTokenAtMs` less `startedAtMs`, both read on this host's clock; null when not measured. */
export function msSince(startedAtMs: number, firstTokenAtMs: number | null): number | null {
  return firstTokenAtMs === null ? null : firstTokenAtMs - startedAtMs;
}

/** How the step's full weights reach vLLM: sent over NCCL, or reloaded from the exported directory. */
function fullWeightsTransportOf(input: PublishInput, exportPath: string): FullWeightsTransport {
  if (!input.nccl) return checkpointReload(exportPath);
  const step = versionStep(input.nccl.runName, input.version);
  if (step === null)
    throw ApplicationFailure.nonRetryable(
      `version ${input.version} is not a step of run ${input.nccl.runName}: nothing to send over NCCL`,
      'NothingToPublish',
    );
  return ncclTransfer({
    trainer: input.nccl.trainer,
    runName: input.nccl.runName,
    step,
    rendezvous: input.nccl.rendezvous,
  });
}

/**
 * A full fine-tuning step into vLLM: its weights loaded (src/vllm/fullWeights.ts: reloaded in place
 * from the trainer's checkpoint, or sent over NCCL) and labelled with the version, then the served
 * model's first token timed. Nothing is unloaded: vLLM holds one set of weights.
 */
async function publishFullWeightsStep(input: PublishInput, startedAtMs: number): Promise<PublishResult> {
  if (!input.exportPath || !input.servedModel)
    throw ApplicationFailure.nonRetryable(
      `no weights exported for ${input.version}: the trainer answered no checkpoint directory`,
      'NothingToPublish',
    );
  const base = input.policyBaseURL.replace(/\/$/, '');
  const headers = policyHeaders(input.apiKeyEnv);
  const { reloadMs } = await publishFullWeights(
    { base, headers, apiKeyEnv: input.apiKeyEnv },
    input.version,
    fullWeightsTransportOf(input, input.exportPath),
    input.pause ? { pause: input.pause } : {},
  );
  const firstTokenAtMs = await firstTokenAt(base, headers, input.servedModel);
  return {
    version: input.version,
    firstTokenAtMs,
    publishMs: msSince(startedAtMs, firstTokenAtMs),
    loadMs: reloadMs,
    unloaded: [],
    unloadFailures: [],
  };
}

export function createRunBookkeepingActivities(store: ArtifactStore) {
  return {
    async listScenarioIds(dir: string): Promise<string[]> {
      const { scenarios, problems } = loadScenarioLibrary(dir);
      if (problems.length > 0)
        throw ApplicationFailure.nonRetryable(
          `invalid scenarios in ${dir}: ${problems
            .slice(0, 3)
            .map((p) => `${p.file}: ${p.message}`)
            .join('; ')}`,
          'InvalidScenarios',
        );
      return scenarios.map((s) => s.id).sort();
    },

    /**
     * Makes a new version samplable. The trainer serves `run@step` itself; a vLLM server loads the
     * step's LoRA adapter through its runtime API under that name (src/vllm/load.ts: a refused load is
     * not retried). Loading twice is not an error. With vLLM it then times the first token the
     * version serves and unloads the run's versions older than the newest `unload.keep`.
     */
    async publishPolicyVersion(input: PublishInput): Promise<PublishResult> {
      const startedAtMs = Date.now();
      const base = input.policyBaseURL.replace(/\/$/, '');
      const headers = policyHeaders(input.apiKeyEnv);
      if (input.mode === 'vllm' && input.weights === 'full') return publishFullWeightsStep(input, startedAtMs);
      let loadMs: number | undefined;
      if (input.mode === 'vllm') {
        if (!input.exportPath)
          throw ApplicationFailure.nonRetryable(
            `no adapter exported for ${input.version}: vLLM publishing needs a LoRA run`,
            'NothingToPublish',
          );
        const loadStartedAtMs = Date.now();
        await loadLoraAdapter({
          base,
          headers,
          version: input.version,
          adapterPath: input.exportPath,
          apiKeyEnv: input.apiKeyEnv,
        });
        loadMs = Date.now() - loadStartedAtMs;
      }
      const listed = await listedWithVersion(base, headers, input.apiKeyEnv, input.version);
      if (input.mode !== 'vllm')
        return { version: input.version, firstTokenAtMs: null, publishMs: null, unloaded: [], unloadFailures: [] };
      const served = await probeAndUnload(base, headers, input.version, listed, input.unload);
      return {
        version: input.version,
        ...served,
        publishMs: msSince(startedAtMs, served.firstTokenAtMs),
        ...(loadMs !== undefined ? { loadMs } : {}),
      };
    },

    /**
     * Records the step's line once: a retried activity finds it there and writes nothing. The next
     * step's line is appended (on S3 a conditional write: an attempt that outlived its timeout loses
     * no other step's line, and one racing another attempt of its step adds nothing). A log with a torn or bad line (a crash mid-write), or a step recorded out of order,
     * is replaced atomically instead, with the bad lines dropped.
     */
    async recordStepMetrics(record: StepMetricsRecord): Promise<void> {
      const key = runMetricsKey(record.run);
      const text = (await store.getText(key)) ?? '';
      const recorded = parseStepRecords(text, key);
      if (recorded.notes.length === 0 && recorded.steps.some((r) => r.step === record.step)) return;
      const whole = recorded.notes.length === 0 && (text === '' || text.endsWith('\n'));
      if (whole && (recorded.steps.at(-1)?.step ?? -Infinity) < record.step)
        // The step names the append: an attempt racing another of the same step (both read the log
        // before either wrote) finds the other's line there and adds none.
        await store.appendLine(key, JSON.stringify(record), `step-${record.step}`);
      else await store.putText(key, withStepRecord(text, record));
    },
  };
}

export type RunBookkeepingActivities = ReturnType<typeof createRunBookkeepingActivities>;
