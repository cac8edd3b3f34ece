import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ServerResponse } from 'node:http';

/**
 * How the fake answers a load, as vLLM 0.32 does: `rank`, 500 from the LoRA loader (the adapter's
 * rank above --max-lora-rank); `missing`, 404 (no adapter at the path, e.g. a path vLLM cannot see);
 * `key`, 401 from its API-key check; `unavailable`, 503; `drop`, the connection closed unanswered.
 */
export type LoraAnswer = 'rank' | 'missing' | 'key' | 'unavailable' | 'drop';

export interface LoraLoadRecord {
  name: string;
  path: string;
  /** HTTP status answered; 0 for a dropped connection. */
  status: number;
  /** The names loaded once this load was answered. */
  table: string[];
}

/**
 * vLLM's runtime LoRA API on the fake server: `POST /v1/load_lora_adapter` loads a name (its
 * request log in `loads`; a name already loaded is refused unless the request says `load_inplace`,
 * as vLLM does), `POST /v1/unload_lora_adapter` unloads one (404 for a name it does not have),
 * and `GET /v1/models` lists the loaded names. Error bodies take each shape
 * vLLM writes, so the client is checked against all of them.
 */
export class FakeLoraAdapters {
  readonly loads: LoraLoadRecord[] = [];
  /** Names asked to unload (`POST /v1/unload_lora_adapter`), with the status answered. */
  readonly unloads: { name: string; status: number }[] = [];
  /** Called after each answered load (a test's hook: e.g. a restart once a version is loaded). */
  afterLoad: ((name: string, status: number) => void) | null = null;
  /**
   * As vLLM: a completion of an adapter name (`run@step`) not loaded is answered 404
   * "does not exist". Off by default, so tests that use the fake as a plain endpoint name any model.
   */
  servesOnlyLoaded = false;
  private readonly loaded = new Map<string, string>();
  /** Every load is answered so until cleared (null: loads succeed). */
  refuse: LoraAnswer | null = null;
  /** Answers for the next loads, one each, before `refuse` applies. */
  readonly next: LoraAnswer[] = [];
  /** The server's --max-lora-rank, quoted in the `rank` refusal. */
  maxLoraRank = 16;
  /**
   * False: a server older than `load_inplace` (vLLM before 0.10), which ignores the field and
   * refuses a name it already has as "already been loaded", keeping the old weights.
   */
  inplace = true;

  names(): string[] {
    return [...this.loaded.keys()];
  }

  /** Whether a completion of `model` is served (see servesOnlyLoaded): base models are, adapter names `run@step` once loaded. */
  serves(model: string): boolean {
    return !this.servesOnlyLoaded || !model.includes('@') || this.loaded.has(model);
  }

  /** A vLLM restart: runtime-loaded adapters are gone. */
  forgetAll(): void {
    this.loaded.clear();
  }

  unload(body: string, res: ServerResponse, send: (res: ServerResponse, status: number, body: unknown) => void): void {
    const name = (JSON.parse(body) as { lora_name?: unknown }).lora_name;
    const known = typeof name === 'string' && this.loaded.delete(name);
    this.unloads.push({ name: String(name), status: known ? 200 : 404 });
    if (known) return send(res, 200, `Success: LoRA adapter '${String(name)}' removed successfully.`);
    send(res, 404, {
      error: {
        message: `The lora adapter '${String(name)}' cannot be found.`,
        type: 'NotFoundError',
        param: null,
        code: 404,
      },
    });
  }

  load(body: string, res: ServerResponse, send: (res: ServerResponse, status: number, body: unknown) => void): void {
    const request = JSON.parse(body) as { lora_name?: unknown; lora_path?: unknown; load_inplace?: unknown };
    const name = typeof request.lora_name === 'string' ? request.lora_name : '';
    const path = typeof request.lora_path === 'string' ? request.lora_path : '';
    const answer = this.next.shift() ?? this.refuse;
    const answered = (status: number, reply: unknown) => {
      this.loads.push({ name, path, status, table: this.names() });
      this.afterLoad?.(name, status);
      send(res, status, reply);
    };
    if (answer === 'drop') {
      this.loads.push({ name, path, status: 0, table: this.names() });
      res.socket?.destroy();
      return;
    }
    if (answer === 'key') return answered(401, { error: 'Unauthorized' });
    if (answer === 'unavailable')
      return answered(503, { error: { message: 'Service Unavailable', type: 'ServiceUnavailableError', code: 503 } });
    if (answer === 'missing')
      return answered(404, {
        object: 'error',
        message: `Loading lora ${name} failed: No adapter found for ${path}`,
        type: 'NotFoundError',
        param: null,
        code: 404,
      });
    if (answer === 'rank')
      return answered(500, {
        error: {
          message: `LoRA rank ${adapterRank(path) ?? '?'} is greater than max_lora_rank ${this.maxLoraRank}.`,
          type: 'InternalServerError',
          param: null,
          code: 500,
        },
      });
    if (this.loaded.has(name) && (request.load_inplace !== true || !this.inplace))
      return answered(400, {
        error: {
          message: `The lora adapter '${name}' has already been loaded.`,
          type: 'InvalidUserInput',
          param: null,
          code: 400,
        },
      });
    this.loaded.set(name, path);
    answered(200, `Success: LoRA adapter '${name}' added successfully.`);
  }
}

/** The rank in the adapter's own config, when the path holds one. */
function adapterRank(path: string): number | null {
  const file = join(path, 'adapter_config.json');
  if (!existsSync(file)) return null;
  const r = (JSON.parse(readFileSync(file, 'utf8')) as { r?: unknown }).r;
  return typeof r === 'number' ? r : null;
}
