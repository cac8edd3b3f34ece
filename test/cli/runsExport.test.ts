import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listEvaluations, listRuns } from '../../src/client/runListing.js';
import type { RunDetail } from '../../src/client/runDetail.js';
import type { EvaluationRow, RunRow } from '../../src/core/runListing.js';
import { REPO_ROOT } from '../../src/paths.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';
import { attune } from './attuneProcess.js';

const sha256Of = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

/** Visibility indexes a change a moment after it happens: poll until `ready`, up to a deadline. */
async function eventually<T>(what: string, read: () => Promise<T>, ready: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await read();
    if (ready(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not there after 60 s; last seen ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe('finding runs and exporting a model from the command line', function () {
  this.timeout(400_000);
  let rig: TrainingRig | undefined;
  after(async () => {
    await rig?.close();
  });

  it('runs list, evals list and runs show after a tiny run; export writes what transformers loads', async () => {
    rig = await createTrainingRig({ set: [...TINY_TRAINING('grpo', 2), 'training.evalEvery=2'] });
    await rig.startWorkers();
    const { handle } = await rig.start('listed');
    await handle.result();
    const client = rig.client;
    await eventually(
      'the run in the listing',
      () => listRuns(client),
      (rows) => rows.some((r) => r.name === 'listed' && r.phase === 'done' && r.step === 2),
    );
    await eventually(
      "the run's evaluation with its score",
      () => listEvaluations(client, 'listed'),
      (rows) => rows.some((r) => r.score !== null),
    );
    const set = rig.configSet.flatMap((s) => ['--set', s]);
    const env = { TEMPORAL_ADDRESS: rig.address };

    const out = join(mkdtempSync(join(tmpdir(), 'attune-export-')), 'model');
    // The commands only read (or write their own directories): each in its own process, all at once,
    // since each spends its time loading the CLI's modules.
    const [runs, evals, table, shown, human, unknown, exported, missing, malformed, overHttp] = await Promise.all([
      attune(['runs', 'list', '--json', ...set], env),
      attune(['evals', 'list', '--json', ...set], env),
      attune(['runs', 'list', ...set], env),
      attune(['runs', 'show', 'listed', '--json', ...set], env),
      attune(['runs', 'show', 'listed', ...set], env),
      attune(['runs', 'show', 'nobody', ...set], env),
      attune(['export', 'listed@2', '--out', out, '--state-dir', rig.trainer.stateDir, '--json', ...set], env),
      attune(['export', 'listed@9', '--out', `${out}-9`, '--state-dir', rig.trainer.stateDir], env),
      attune(['export', 'listed', '--out', `${out}-x`], env),
      attune(['export', 'listed@2', '--out', `${out}-http`, '--trainer-url', rig.trainer.url, '--json', ...set], env),
    ]);

    assert.equal(runs.code, 0, runs.stderr);
    const runRows = JSON.parse(runs.stdout) as RunRow[];
    assert.ok(Array.isArray(runRows));
    const row = runRows.find((r) => r.name === 'listed');
    assert.ok(row, runs.stdout);
    assert.equal(row.phase, 'done');
    assert.equal(row.step, 2);
    assert.equal(typeof row.lastReward, 'number');
    assert.ok(row.started <= row.updated);

    assert.equal(evals.code, 0, evals.stderr);
    const evalRows = JSON.parse(evals.stdout) as EvaluationRow[];
    const evaluation = evalRows.find((r) => r.run === 'listed');
    assert.ok(evaluation, evals.stdout);
    assert.equal(typeof evaluation.id, 'string');
    assert.ok(typeof evaluation.score === 'number' && evaluation.score >= 0 && evaluation.score <= 100);

    assert.match(table.stdout, /^name +phase +step +last reward +started +updated$/m);
    assert.match(table.stdout, /^listed +done +2 /m);

    assert.equal(shown.code, 0, shown.stderr);
    const detail = JSON.parse(shown.stdout) as RunDetail;
    assert.equal(detail.latestVersion, 'listed@2');
    assert.deepEqual(
      detail.steps.map((s) => s.step),
      [1, 2],
    );
    assert.equal(detail.steps[1]?.sampledFrom, 'listed@1');
    // Without training.maxStaleness every sample is on-policy; no sampler log-probs make the weights null.
    assert.deepEqual(Object.keys(detail.steps[1]?.stalenessHistogram ?? {}), ['0']);
    assert.ok(detail.steps.every((s) => s.isWeightMean === null || typeof s.isWeightMean === 'number'));
    assert.ok(detail.steps.every((s) => 'isTruncatedShare' in s));
    assert.match(human.stdout, /^ +2 +listed@1 .* 0: \d+ /m);
    assert.equal(detail.evaluations[0]?.id, evaluation.id);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no training run named nobody/);

    assert.equal(exported.code, 0, exported.stderr);
    assert.deepEqual(JSON.parse(exported.stdout), { run_id: 'listed', step: 2, format: 'full', path: out });
    const load = spawnSync(
      join(REPO_ROOT, '.venv', 'bin', 'python'),
      [
        '-c',
        'import sys; from transformers import AutoModelForCausalLM, AutoTokenizer\n' +
          'm = AutoModelForCausalLM.from_pretrained(sys.argv[1]); t = AutoTokenizer.from_pretrained(sys.argv[1])\n' +
          'ids = t.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True, return_tensors="pt", return_dict=True)\n' +
          'print(m.generate(**ids, max_new_tokens=3, do_sample=False).shape[1] > ids["input_ids"].shape[1])',
        out,
      ],
      { encoding: 'utf8', env: { ...process.env, HF_HUB_OFFLINE: '1' } },
    );
    assert.equal(load.status, 0, load.stderr);
    assert.equal(load.stdout.trim(), 'True');

    // A full fine-tuning run over the trainer's weights route: the checkpoint's weights, as the local export copies them.
    assert.equal(overHttp.code, 0, overHttp.stderr);
    const fetched = JSON.parse(overHttp.stdout) as { format: string; path: string; digest: string };
    assert.equal(fetched.format, 'full');
    assert.equal(fetched.path, `${out}-http`);
    const weights = readdirSync(out).filter((name) => name.endsWith('.safetensors'));
    assert.ok(weights.length > 0, 'the local export has safetensors');
    for (const name of weights) assert.equal(sha256Of(join(`${out}-http`, name)), sha256Of(join(out, name)), name);
    assert.ok(readdirSync(`${out}-http`).includes('config.json'));

    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /run 'listed' has no checkpoint of step 9/);
    assert.equal(malformed.code, 2);
    assert.match(malformed.stderr, /expected NAME@STEP/);
  });

  it('has --help for runs, evals and export', async () => {
    const commands = [['runs'], ['runs', 'list'], ['runs', 'show'], ['evals'], ['evals', 'list'], ['export']];
    const results = await Promise.all(commands.map((command) => attune([...command, '--help'])));
    commands.forEach((command, i) => {
      const result = results[i]!;
      assert.equal(result.code, 0, `${command.join(' ')} --help: ${result.stderr}`);
      assert.match(result.stdout, new RegExp(`attune ${command[0]}`));
    });
  });
});
