import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { describeServedModel } from '../../src/activities/servedModel.js';
import { freePort } from '../../src/temporal/devServer.js';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';

describe("the simulator's served model, as its endpoint lists it (GET /v1/models)", () => {
  let fake: FakeOpenAIServer;
  before(async () => {
    fake = await FakeOpenAIServer.start();
  });
  after(() => fake.close());

  it('names the listed model under the configured name, with its owner', async () => {
    const served = await describeServedModel({ baseURL: fake.url, model: 'fake-model', apiKeyEnv: 'NO_SUCH_KEY' });
    assert.deepEqual(served, { id: 'fake-model', root: null, ownedBy: 'attune-test' });
  });

  it('says so, naming the endpoint, when the name is not listed or the endpoint is away or answers no list', async () => {
    const missing = await describeServedModel({ baseURL: fake.url, model: 'judge-x', apiKeyEnv: 'NO_SUCH_KEY' });
    assert.deepEqual(missing, { unavailable: `"judge-x" is not among the 1 model(s) ${fake.url}/models lists` });

    const away = `http://127.0.0.1:${await freePort()}/v1`;
    const down = await describeServedModel({ baseURL: away, model: 'judge-x', apiKeyEnv: 'NO_SUCH_KEY' });
    assert.ok('unavailable' in down && down.unavailable.startsWith(`GET ${away}/models failed:`), JSON.stringify(down));

    const garbage: Server = createServer((_req, res) => res.end('{"models": "none"}'));
    const port = await freePort();
    await new Promise<void>((resolve) => garbage.listen(port, '127.0.0.1', resolve));
    try {
      const odd = await describeServedModel({
        baseURL: `http://127.0.0.1:${port}/v1`,
        model: 'judge-x',
        apiKeyEnv: 'NO_SUCH_KEY',
      });
      assert.deepEqual(odd, { unavailable: `GET http://127.0.0.1:${port}/v1/models did not answer a model list` });
    } finally {
      garbage.close();
    }
  });
});
