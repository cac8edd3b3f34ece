import assert from 'node:assert/strict';
import { renderRunPage } from '../../src/report/index.js';
import { RUN, stepRecord } from './fixtures.js';

describe('publish latency on the run page', () => {
  const page = (latencies: (number | null | undefined)[]) =>
    renderRunPage({
      run: RUN,
      steps: latencies.map((publishLatencyMs, i) => ({
        ...stepRecord(i + 1),
        ...(publishLatencyMs !== undefined ? { publishLatencyMs } : {}),
      })),
      evaluations: [],
      generatedAt: 'now',
    });

  it("shows each step's commit-to-first-token time in the step table and charts it", () => {
    const html = page([72, 65]);
    assert.match(html, /<th[^>]*>Publish ms<\/th>/);
    assert.match(html, /<td class="num" data-v="72">72<\/td>/);
    assert.match(html, /<td class="num" data-v="65">65<\/td>/);
    assert.match(html, /data-png="publish-latency"/);
  });

  it('shows a dash and no chart when it was not measured (publish: trainer, older records)', () => {
    const html = page([null, undefined]);
    assert.match(html, /<td class="num" data-v="-1"><span class="muted">–<\/span><\/td>/);
    assert.doesNotMatch(html, /data-png="publish-latency"/);
  });
});
