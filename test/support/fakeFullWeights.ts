import type { ServerResponse } from 'node:http';
import { FULL_WEIGHTS_ROUTES } from '../../src/vllm/fullWeightsRoutes.js';
import type { FakeNcclMeeting } from './fakeNcclMeeting.js';

type Send = (res: ServerResponse, status: number, body: unknown) => void;

/** The routes a full-weights publish calls: the one list test:vllm checks against the real vLLM's. */
const SERVED_ROUTES = new Set<string>(FULL_WEIGHTS_ROUTES.map(([, path]) => path));

const NCCL_ROUTES = [
  '/shutdown_weight_transfer_engine',
  '/init_weight_transfer_engine',
  '/start_weight_update',
  '/update_weights',
  '/finish_weight_update',
];

/** vLLM 0.32's `/pause` modes: `abort` (its default) ends the requests in flight, `wait` drains them, `keep` freezes them. */
type PauseMode = 'abort' | 'wait' | 'keep';

/**
 * vLLM 0.32's RL routes in dev mode (VLLM_SERVER_DEV_MODE=1), at the server's root: `/pause`,
 * `/resume`, `/is_paused`, `/collective_rpc` (only `reload_weights` here), `/update_weight_version`,
 * `/reset_prefix_cache` and `/weight_info`, and the native weight transfer's (NCCL_ROUTES), whose
 * init and update meet the trainer's side at `meeting`. The weight version starts as vLLM's launch
 * label `default`; `calls` records every request in order, with the version at the time. Off
 * (`devMode` false) every route answers 404, as a vLLM started without dev mode does.
 *
 * Generation follows the pause as vLLM's scheduler does (`generation`, around each chat completion
 * of the fake): while paused no new request starts; `/pause?mode=wait` answers once the requests in
 * flight are done; `mode=keep` answers at once and freezes them until `/resume`, after which they end
 * on whatever weights are loaded by then. Each completion learns the labels its tokens were made
 * under (the one when it started, and the one when it ended if that differs).
 */
export class FakeFullWeights {
  devMode = true;
  version = 'default';
  paused = false;
  /** The weights directory of the last reload (null: the launch weights). */
  weightsPath: string | null = null;
  readonly calls: { route: string; body: unknown; version: string; paused: boolean }[] = [];
  /** The next reloads fail with this message (HTTP 500, as vLLM answers a worker's exception). */
  readonly failReloads: string[] = [];
  /** The next this many `/resume` calls answer HTTP 500, leaving the server paused. */
  failResumes = 0;
  /** Native weight transfer: where the trainer's side is met (null: no trainer ever arrives). */
  meeting: FakeNcclMeeting | null = null;
  /** The init_info of the group the workers joined (null: none; a restart forgets it). */
  ncclGroup: unknown = null;
  /** A weight update started and not finished. */
  updateActive = false;
  /** The update_info of each update whose weights arrived. */
  readonly received: unknown[] = [];
  /** Routes answered once with HTTP 500 and this message, as vLLM answers a worker's exception. */
  readonly refuse = new Map<string, string>();
  /** How long a `reload_weights` takes (a benchmark's stand-in for a model's size; 0: at once). */
  reloadMs = 0;
  /** The mode of the pause in force (null: not paused). */
  pauseMode: PauseMode | null = null;
  /** `/reset_prefix_cache` calls answered, with the label at the time. */
  readonly prefixResets: string[] = [];
  /** Awaited by `/pause` before it pauses: a test holds a publish there (e.g. until a call is in flight). */
  beforePause: ((version: string) => Promise<void>) | null = null;
  /** Told once `/pause` holds new requests (before a `wait` drains those in flight, and before it answers). */
  afterPause: ((version: string) => void) | null = null;
  private readonly inFlight = new Set<Promise<void>>();
  /** Chat completions between their start and their end (see `generation`). */
  private generating = 0;
  private readonly wakers: (() => void)[] = [];

  /** A vLLM restart: back on its launch weights, unpaused, in no weight-transfer group. */
  restart(): void {
    this.version = 'default';
    this.weightsPath = null;
    this.setPaused(null);
    this.ncclGroup = null;
    this.updateActive = false;
  }

  /**
   * One chat completion as vLLM's scheduler runs it: `make` is the generation, started once no pause
   * holds new requests, and ended only when no `keep` pause freezes it. Returns `make`'s value and the
   * weight labels from the start to the end (two when a reload came in between).
   */
  async generation<T>(make: () => Promise<T>): Promise<{ value: T; weights: string[] }> {
    while (this.paused) await this.change();
    this.generating++;
    const first = this.version;
    try {
      const value = await make();
      while (this.paused && this.pauseMode === 'keep') await this.change();
      return { value, weights: this.version === first ? [first] : [first, this.version] };
    } finally {
      this.generating--;
      this.wake();
    }
  }

  private setPaused(mode: PauseMode | null): void {
    this.paused = mode !== null;
    this.pauseMode = mode;
    this.wake();
  }

  private change(): Promise<void> {
    return new Promise((resolve) => this.wakers.push(resolve));
  }

  private wake(): void {
    for (const wake of this.wakers.splice(0)) wake();
  }

  /** `POST /pause?mode=…`: new requests wait; `wait` answers once those in flight are done. */
  private async pause(url: string, res: ServerResponse, send: Send): Promise<void> {
    const mode = (new URL(url, 'http://fake').searchParams.get('mode') ?? 'abort') as PauseMode;
    if (!['abort', 'wait', 'keep'].includes(mode)) return send(res, 400, { error: `Invalid pause mode: ${mode}` });
    await this.beforePause?.(this.version);
    this.setPaused(mode);
    this.afterPause?.(this.version);
    while (mode === 'wait' && this.generating > 0) await this.change();
    send(res, 200, { status: 'paused' });
  }

  /** Resolves once the NCCL calls still waiting for the trainer have answered. */
  async settled(): Promise<void> {
    await Promise.all([...this.inFlight]);
  }

  /** Answers `url` when it is one of the routes (true), else leaves it to the caller (false). */
  handle(method: string, url: string, body: string, res: ServerResponse, send: Send): boolean {
    const route = url.replace(/\?.*$/, '');
    if (!SERVED_ROUTES.has(route)) return false;
    const parsed: unknown = body ? JSON.parse(body) : null;
    this.calls.push({ route: url, body: parsed, version: this.version, paused: this.paused });
    if (!this.devMode) {
      send(res, 404, { detail: 'Not Found' });
      return true;
    }
    const refusal = this.refuse.get(route);
    if (refusal !== undefined) {
      this.refuse.delete(route);
      // vLLM ends the session when a worker's update raises (not when its finish does)
      if (route === '/update_weights') this.updateActive = false;
      send(res, 500, { error: { message: refusal, type: 'InternalServerError', param: null, code: 500 } });
    } else if (NCCL_ROUTES.includes(route)) {
      const answer = this.transfer(route, parsed, res, send).finally(() => this.inFlight.delete(answer));
      this.inFlight.add(answer);
    } else if (method === 'GET' && route === '/weight_info') send(res, 200, { weight_version: this.version });
    else if (method === 'GET' && route === '/is_paused') send(res, 200, { is_paused: this.paused });
    else if (method !== 'POST') send(res, 405, { detail: 'Method Not Allowed' });
    else if (route === '/pause') {
      const answer = this.pause(url, res, send).finally(() => this.inFlight.delete(answer));
      this.inFlight.add(answer);
    } else if (route === '/resume' && this.failResumes > 0) {
      this.failResumes--;
      send(res, 500, { error: 'Failed to resume generation: engine core busy' });
    } else if (route === '/resume') {
      this.setPaused(null);
      send(res, 200, { status: 'resumed' });
    } else if (route === '/reset_prefix_cache') {
      this.prefixResets.push(this.version);
      send(res, 200, { success: true });
    } else if (route === '/update_weight_version') {
      this.version = String((parsed as { new_version?: unknown }).new_version);
      send(res, 200, { success: true, new_version: this.version });
    } else {
      const request = parsed as { method?: unknown; kwargs?: { weights_path?: unknown } };
      const failure = this.failReloads.shift();
      if (request.method !== 'reload_weights') send(res, 400, { error: `unknown method ${String(request.method)}` });
      else if (failure !== undefined)
        send(res, 500, { error: { message: failure, type: 'InternalServerError', param: null, code: 500 } });
      else {
        this.weightsPath = String(request.kwargs?.weights_path);
        if (this.reloadMs > 0) setTimeout(() => send(res, 200, { results: [null] }), this.reloadMs);
        else send(res, 200, { results: [null] });
      }
    }
    return true;
  }

  /** The native weight transfer's routes, with vLLM's own checks and the rendezvous with the trainer. */
  private async transfer(route: string, body: unknown, res: ServerResponse, send: Send): Promise<void> {
    const fail = (message: string) =>
      send(res, 500, { error: { message, type: 'InternalServerError', param: null, code: 500 } });
    const request = (body ?? {}) as { init_info?: unknown; update_info?: unknown };
    if (route === '/shutdown_weight_transfer_engine') {
      if (this.updateActive) return fail('Cannot release a trainer connection during a weight update');
      this.ncclGroup = null;
      return send(res, 200, { message: 'Weight transfer shut down' });
    }
    if (route === '/init_weight_transfer_engine') {
      if (!(await this.meeting?.arrive('init', 'vllm')))
        return fail('NCCL rendezvous timed out: the trainer never joined');
      this.ncclGroup = request.init_info;
      return send(res, 200, { message: 'Weight transfer initialized' });
    }
    if (route === '/start_weight_update') {
      if (this.updateActive) return fail('start_weight_update called while a weight update is already active');
      this.updateActive = true;
      return send(res, 200, { message: 'Weight update started' });
    }
    if (route === '/update_weights') {
      if (this.ncclGroup === null)
        return fail('NCCL weight transfer not initialized. Call init_transfer_engine() first.');
      if (!this.updateActive) return fail('start_weight_update must be called before update_weights.');
      if (!(await this.meeting?.arrive('update', 'vllm'))) {
        this.updateActive = false;
        return fail('NCCL broadcast timed out: the trainer never sent');
      }
      this.received.push(request.update_info);
      return send(res, 200, { message: 'Weights updated' });
    }
    if (!this.updateActive) return fail('finish_weight_update called without a matching start_weight_update.');
    this.updateActive = false;
    this.weightsPath = 'nccl';
    return send(res, 200, { message: 'Weight update finished' });
  }
}
