import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Browser } from 'playwright-core';
import { REPO_ROOT } from '../../src/paths.js';
import { CHROMIUM_ARGS, resolveChromium } from '../../src/report/write.js';
import { DevServer } from '../../src/temporal/devServer.js';
import { continueSignal } from '../../src/workflows/outageWait.js';
import { ROLLOUT_MODES } from '../support/rolloutModes.js';
import { createRolloutRig, fixtureScenario, type RolloutRig } from '../support/rolloutRig.js';

/** Screenshots for the README's operator page (test-output/ is git-ignored; copy them to docs/ by hand). */
const SHOTS = join(REPO_ROOT, 'test-output', 'ui');

describe('a rollout in the real Temporal UI (dev server with its UI, headless Chromium)', function () {
  let server: DevServer | undefined;
  let env: TestWorkflowEnvironment | undefined;
  let rig: RolloutRig | undefined;
  let browser: Browser | undefined;
  after(async () => {
    await browser?.close();
    await rig?.close();
    await env?.teardown();
    await server?.stop();
  });

  it('shows each activity of the dialogue on the timeline with its summary, and the details with the emotion path', async () => {
    server = await DevServer.create({ home: mkdtempSync(join(tmpdir(), 'attune-ui-')) });
    await server.start();
    assert.ok(server.uiUrl);
    env = await TestWorkflowEnvironment.createFromExistingServer({ address: server.address, namespace: 'default' });
    // One activity per call: the timeline this test reads row by row (local turns show a marker per turn).
    rig = await createRolloutRig({
      env,
      behaviour: { analysis: () => ({ emotionChange: 3 }) },
      set: [...ROLLOUT_MODES.perCall],
    });
    await rig.startWorkers();
    const handle = await rig.startRollout(fixtureScenario('test-venting-negative-baker'), 7, {
      maxTurns: 3,
      initialEmotion: 40,
    });
    await handle.result();

    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: resolveChromium(), args: CHROMIUM_ARGS });
    const page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
    await page.goto(`${server.uiUrl}/namespaces/default/workflows/${encodeURIComponent(handle.workflowId)}`);
    // The timeline draws once the history has loaded; each label is "activity type • summary".
    const expected = [
      'turn 1 · policy reply',
      'turn 1 · analysis of the reply (emotion 40)',
      'turn 1 · user reply (analysis: 40 → 43, +3)',
      'turn 3 · analysis of the reply (emotion 46)',
      'transcript · 3 turns, turn-limit, final emotion 49',
    ];
    for (const text of expected) await page.getByText(text).first().waitFor({ timeout: 30_000 });
    mkdirSync(SHOTS, { recursive: true });
    await page.getByText('Timeline', { exact: true }).last().scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(SHOTS, 'rollout-timeline.png'), fullPage: true });

    await page.getByRole('tab', { name: 'User Metadata' }).click();
    // The UI renders the Markdown of the current details in a sandboxed frame of its own.
    const details = page.frameLocator('iframe').getByText('40 → 43 → 46 → 49');
    await details.first().waitFor({ timeout: 30_000 });
    const text = await page.frameLocator('iframe').locator('body').innerText();
    assert.match(text, /turn\s*3 of 3 · phase\s*done/);
    assert.match(text, /outcome\s*turn-limit/);
    await page.screenshot({ path: join(SHOTS, 'rollout-details.png'), fullPage: true });
  });

  it('a rollout waiting at a failed call: its details name the call, the endpoint and the error; the `continue` signal lets it finish', async () => {
    assert.ok(server?.uiUrl && rig && browser, 'the first test started the server, the workers and the browser');
    // The simulator answers 500 to the analysis of turn 2 until the test brings it back.
    let down = true;
    rig.fake.behaviour = {
      analysis: () => ({ emotionChange: 3 }),
      fault: (ctx) => (down && ctx.role === 'analysis' && ctx.turn === 2 ? '500' : undefined),
    };
    const handle = await rig.startRollout(fixtureScenario('test-venting-negative-baker'), 9, {
      maxTurns: 3,
      initialEmotion: 40,
      simulator: { ...rig.settings().simulator, retry: { ...rig.settings().simulator.retry, maximumAttempts: 2 } },
    });
    const page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
    const url = `${server.uiUrl}/namespaces/default/workflows/${encodeURIComponent(handle.workflowId)}`;
    await page.goto(url);
    await page.getByRole('tab', { name: 'User Metadata' }).click();
    const frame = page.frameLocator('iframe');
    // The page is fetched once: load it again until the rollout waits.
    const deadline = Date.now() + 60_000;
    while (!(await frame.getByText('waiting for an operator').count())) {
      if (Date.now() > deadline) throw new Error('the UI never showed the rollout waiting');
      await page.reload();
      await page.getByRole('tab', { name: 'User Metadata' }).click();
      await frame.locator('body').waitFor({ timeout: 30_000 });
    }
    const text = await frame.locator('body').innerText();
    assert.match(text, /waiting for an operator\s*at turn 2 · analysis of the reply \(emotion 43\)/);
    assert.match(text, /endpoint\s*http:\/\/127\.0\.0\.1:\d+\/v1 \(model ["“]fake-simulator["”]\)/);
    assert.match(text, /last error\s*.*HTTP 500/);
    assert.match(text, /signal\s*continue/);
    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: join(SHOTS, 'rollout-waiting.png'), fullPage: true });

    down = false;
    await handle.signal(continueSignal);
    const summary = await handle.result();
    assert.deepEqual(summary.emotions, [40, 43, 46, 49]);
  });
});
