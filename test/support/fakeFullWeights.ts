import type { ServerResponse } from 'node:http';

type Send = (res: ServerResponse, status: number, body: unknown) => void;

/**
 * vLLM 0.32's RL routes in dev mode (VLLM_SERVER_DEV_MODE=1), at the server's root: `/pause`,
 * `/resume`, `/collective_rpc` (only `reload_weights` here), `/update_weight_version` and
 * `/weight_info`. The weight version starts as vLLM's launch label `default`; `calls` records every
 * request in order, with the version at the time. Off (`devMode` false) every route answers 404, as
 * a vLLM started without dev mode does.
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

  /** A vLLM restart: back on its launch weights, unpaused. */
  restart(): void {
    this.version = 'default';
    this.weightsPath = null;
    this.paused = false;
  }

  /** Answers `url` when it is one of the routes (true), else leaves it to the caller (false). */
  handle(method: string, url: string, body: string, res: ServerResponse, send: Send): boolean {
    const route = url.replace(/\?.*$/, '');
    if (!['/pause', '/resume', '/collective_rpc', '/update_weight_version', '/weight_info'].includes(route))
      return false;
    const parsed: unknown = body ? JSON.parse(body) : null;
    this.calls.push({ route: url, body: parsed, version: this.version, paused: this.paused });
    if (!this.devMode) {
      send(res, 404, { detail: 'Not Found' });
      return true;
    }
    if (method === 'GET' && route === '/weight_info') send(res, 200, { weight_version: this.version });
    else if (method !== 'POST') send(res, 405, { detail: 'Method Not Allowed' });
    else if (route === '/pause') {
      this.paused = true;
      send(res, 200, { status: 'paused' });
    } else if (route === '/resume') {
      this.paused = false;
      send(res, 200, { status: 'resumed' });
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
        send(res, 200, { results: [null] });
      }
    }
    return true;
  }
}
