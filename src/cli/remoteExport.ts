import { existsSync, readdirSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { downloadAdapter, fetchAdapterManifest, type AdapterManifest } from '../trainer/adapterFiles.js';
import type { TrainerEndpoint } from '../trainer/trainerClient.js';

export interface RemoteExportSummary {
  run_id: string;
  step: number;
  /** As the trainer's local export names them: a LoRA adapter, or a full fine-tuning run's weights. */
  format: 'lora_adapter' | 'full';
  path: string;
  digest: string;
}

/**
 * `attune export NAME@STEP --trainer-url URL`: the step's LoRA adapter, or a full fine-tuning run's model
 * directory, fetched over the trainer's adapter or weights route into `out` (new or empty), each file and
 * the whole checked against the trainer's digest.
 * The trainer's answers (no such run or step, a full fine-tuning run, a refused token) become errors
 * that name the trainer, the run and the step.
 */
export async function exportOverHttp(
  trainer: TrainerEndpoint,
  run: string,
  step: number,
  out: string,
): Promise<RemoteExportSummary> {
  const dir = resolve(out);
  if (existsSync(dir) && (!statSync(dir).isDirectory() || readdirSync(dir).length > 0))
    throw new Error(`--out ${dir}: already exists and is not an empty directory`);
  try {
    const manifest = await manifestOf(trainer, run, step);
    await downloadAdapter(trainer, manifest, dir);
    const format = manifest.format === 'hf_full' ? 'full' : 'lora_adapter';
    return { run_id: run, step, format, path: dir, digest: manifest.digest };
  } catch (error) {
    // The activities' typed failures read as plain errors on the operator's terminal.
    if (error instanceof ApplicationFailure)
      throw new Error(`export ${run}@${step} from ${trainer.url}: ${error.message}`);
    throw error;
  }
}

/**
 * The adapter's manifest or, when the trainer has none for the step (a full fine-tuning run), the full
 * weights'; when it has neither, the adapter route's answer, which names what is missing.
 */
async function manifestOf(trainer: TrainerEndpoint, run: string, step: number): Promise<AdapterManifest> {
  try {
    return await fetchAdapterManifest(trainer, run, step, 'adapter');
  } catch (error) {
    if (!(error instanceof ApplicationFailure && error.type === 'AdapterMissing')) throw error;
    return fetchAdapterManifest(trainer, run, step, 'weights').catch(() => {
      throw error;
    });
  }
}
