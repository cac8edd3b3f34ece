import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import { REPO_ROOT } from '../../src/paths.js';
import { keepGroups } from '../../src/core/training/groups.js';
import { samplesFromTranscript } from '../../src/core/training/samples.js';
import { scenariosForStep } from '../../src/core/training/scenarioSchedule.js';
import { LIVE_HYPERPARAMETERS, LIVE_SETTINGS_RULES, parseLiveSet } from '../../src/core/training/liveSet.js';
import { hyperparametersSchema } from '../../src/core/training/trainingSettingsSchema.js';
import type { Transcript } from '../../src/core/transcript.js';

const IDS = Array.from({ length: 10 }, (_, i) => `s${String(i).padStart(2, '0')}`);

describe('scenario choice per step', () => {
  it('is a pure function of (seed, step)', () => {
    assert.deepEqual(scenariosForStep(IDS, 3, 4, 4), scenariosForStep([...IDS].reverse(), 3, 4, 4));
    assert.notDeepEqual(scenariosForStep(IDS, 3, 1, 4).ids, scenariosForStep(IDS, 4, 1, 4).ids);
  });
  it('never repeats a scenario within an epoch, and covers the split each epoch', () => {
    // 10 scenarios, 4 per step: epoch 0 = positions 0..9 (steps 1-3), epoch 1 = 10..19.
    const positions = [1, 2, 3, 4, 5].flatMap((step) => scenariosForStep(IDS, 9, step, 4).ids);
    assert.deepEqual([...positions.slice(0, 10)].sort(), IDS);
    assert.deepEqual([...positions.slice(10, 20)].sort(), IDS);
    assert.notDeepEqual(positions.slice(0, 10), positions.slice(10, 20), 'each epoch is shuffled anew');
  });
  it('reports the epoch and rejects step 0', () => {
    assert.equal(scenariosForStep(IDS, 1, 3, 4).epoch, 0);
    assert.equal(scenariosForStep(IDS, 1, 4, 4).epoch, 1);
    assert.throws(() => scenariosForStep(IDS, 1, 0, 4), /step must be >= 1/);
    assert.throws(() => scenariosForStep([], 1, 1, 4), /no scenarios/);
  });
});

describe('GRPO groups with dropped members', () => {
  const r = (id: string, group: string, ok: boolean) => ({ rolloutId: id, scenarioId: group, group, ok });
  it('keeps groups with at least two survivors, drops lone survivors, counts failures', () => {
    const d = keepGroups(
      [
        r('a1', 'A', true),
        r('a2', 'A', true),
        r('a3', 'A', false),
        r('b1', 'B', true),
        r('b2', 'B', false),
        r('c1', 'C', false),
      ],
      2,
    );
    assert.deepEqual(
      d.kept.map((x) => x.rolloutId),
      ['a1', 'a2'],
    );
    assert.deepEqual(
      d.dropped.map((x) => x.rolloutId),
      ['b1'],
    );
    assert.equal(d.failed, 3);
  });
  it('PPO (minimum 1) keeps every finished dialogue', () => {
    const d = keepGroups([r('a', 'A', true), r('b', 'B', false)], 1);
    assert.deepEqual(
      d.kept.map((x) => x.rolloutId),
      ['a'],
    );
    assert.equal(d.dropped.length, 0);
  });
});

describe('live changes (attune set)', () => {
  it('accepts known keys with valid values', () => {
    assert.deepEqual(parseLiveSet({ learning_rate: 2e-6, maxInFlight: 32 }), { learning_rate: 2e-6, maxInFlight: 32 });
  });
  it('rejects bad values and unknown keys with the reason', () => {
    assert.throws(() => parseLiveSet({ learning_rate: -1 }), /learning_rate: /);
    assert.throws(() => parseLiveSet({ clip_ratio: 1.5 }), /clip_ratio: /);
    assert.throws(() => parseLiveSet({ base_model: 'x' }), /base_model: cannot be changed on a live run/);
    assert.throws(() => parseLiveSet({ maxInFlight: 'many' }), /maxInFlight: expected a number/);
    assert.throws(() => parseLiveSet({ maxInFlight: 2.5 }), /maxInFlight: expected an integer/);
    assert.throws(
      () => parseLiveSet({ steps: 0, kl_coef: -1 }),
      /kl_coef: must be at least 0.*; steps: must be at least 1/,
    );
  });
  it('live hyperparameters have the same bounds as the trainer hyperparameters schema', () => {
    const samples = [-1, 0, 1e-9, 0.5, 0.999, 1, 1.5, 2, 100];
    for (const key of LIVE_HYPERPARAMETERS) {
      assert.ok(key in LIVE_SETTINGS_RULES, key);
      for (const value of samples) {
        const live = (() => {
          try {
            parseLiveSet({ [key]: value });
            return true;
          } catch {
            return false;
          }
        })();
        assert.equal(live, hyperparametersSchema.shape[key].safeParse(value).success, `${key}=${value}`);
      }
    }
  });
});

describe('optimizer samples', () => {
  it('one sample per assistant turn, raw completion (thinking included), the dialogue reward, grouped', () => {
    const turn = (n: number, raw: string) => ({
      turn: n,
      userMessage: 'u',
      promptMessages: [
        { role: 'system' as const, content: 'sys' },
        { role: 'user' as const, content: `u${n}` },
      ],
      policy: {
        raw,
        reply: 'r',
        thinking: 't',
        malformed: false,
        model: 'm',
        latencyMs: 1,
        usage: { prompt: 1, completion: 1 },
      },
      analysis: null,
      emotionBefore: 30,
      emotionAfter: 30,
      state: 'C' as const,
      userReply: null,
    });
    const t = {
      rolloutId: 'run--s1--0-x--k0',
      reward: 0.42,
      turns: [turn(1, '<think>t</think>r1'), turn(2, '<think>t</think>r2')],
    } as unknown as Transcript;
    const samples = samplesFromTranscript(t, 'g1');
    assert.equal(samples.length, 2);
    assert.deepEqual(
      samples.map((s) => [s.completion, s.reward, s.group, s.trajectory]),
      [
        ['<think>t</think>r1', 0.42, 'g1', 'run--s1--0-x--k0'],
        ['<think>t</think>r2', 0.42, 'g1', 'run--s1--0-x--k0'],
      ],
    );
    assert.equal(samples[1]?.prompt[1]?.content, 'u2');
  });
});

describe('shipped config presets', () => {
  for (const file of readdirSync(join(REPO_ROOT, 'configs')).filter((f) => f.endsWith('.yaml'))) {
    it(`${file} is valid`, () => {
      const warnings: string[] = [];
      const config = loadConfig({
        file: join(REPO_ROOT, 'configs', file),
        env: {},
        onWarning: (w) => warnings.push(w),
      });
      assert.deepEqual(warnings, [], 'a shipped preset uses no deprecated key');
      if (file.startsWith('paper-')) {
        // the paper trains all weights at lr 1e-6, published into vLLM; paper-lora-* train an adapter instead
        assert.equal(config.training.publish.mode, 'vllm');
        assert.equal(config.training.lora?.r ?? null, file.startsWith('paper-lora-') ? 64 : null);
        assert.equal(config.training.hyperparameters.learning_rate, file.startsWith('paper-lora-') ? 1e-5 : 1e-6);
        assert.equal(
          (config.training.samplesPerScenario ?? 1) * config.training.scenariosPerStep,
          32,
          'paper: 32 dialogues per step',
        );
        assert.equal(config.training.dialogue.maxTurns, 8);
        assert.equal(config.training.hyperparameters.clip_ratio, 0.2);
        assert.equal(config.training.hyperparameters.kl_coef, 0);
        assert.equal(config.training.dialogue.think, file.includes('-think'));
      }
    });
  }
});
