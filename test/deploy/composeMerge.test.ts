import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { REPO_ROOT } from '../../src/paths.js';
import { composeFileForV1, mergeComposeFiles } from '../support/composeMerge.js';

/** The merge test:stack hands docker-compose 1.29 (test/support/composeMerge.ts), checked without Docker. */

type Services = Record<string, Record<string, unknown>>;

describe('composeMerge: compose files merged as Compose v2 merges them', () => {
  let dir: string;
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'attune-compose-merge-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('merges mappings key by key, resolves anchors, and honours !reset and !override', () => {
    const base = file(
      'a.yml',
      [
        'name: demo',
        'x-env: &env {A: "1", B: "2"}',
        'services:',
        '  s:',
        '    image: one',
        '    environment: *env',
        '    command: [a, b]',
        "    ports: ['1:1']",
        '    deploy: {resources: {}}',
        '    healthcheck: {test: [CMD, x], interval: 5s}',
      ].join('\n'),
    );
    const override = file(
      'b.yml',
      [
        'services:',
        '  s:',
        '    environment: {B: "3"}',
        '    command: [c]',
        '    ports: !reset []',
        '    deploy: !reset null',
        '    healthcheck: !override {test: [CMD, y]}',
      ].join('\n'),
    );
    const merged = mergeComposeFiles([base, override]) as { name: string; services: Services };
    assert.equal(merged.name, 'demo');
    assert.deepEqual(merged.services['s'], {
      image: 'one',
      environment: { A: '1', B: '3' },
      command: ['c'],
      healthcheck: { test: ['CMD', 'y'] },
    });
  });

  it('refuses a plain sequence where Compose would append rather than replace', () => {
    const base = file('a.yml', "services:\n  s:\n    ports: ['1:1']\n");
    const override = file('b.yml', "services:\n  s:\n    ports: ['2:2']\n");
    assert.throws(() => mergeComposeFiles([base, override]), /services\.s\.ports: Compose would merge/);
  });

  it('writes docker-compose.yml + the CPU override for 1.29: no name, no x- keys, the trainer without a GPU', () => {
    const text = composeFileForV1(['docker-compose.yml', 'docker-compose.cpu.yml'].map((f) => join(REPO_ROOT, f)));
    const written = parse(text) as { services: Services } & Record<string, unknown>;
    assert.deepEqual(
      Object.keys(written).filter((key) => key === 'name' || key.startsWith('x-')),
      [],
    );
    const trainer = written.services['trainer']!;
    assert.equal(trainer['deploy'], undefined);
    assert.match(String(trainer['image']), /TRAINER_CPU_IMAGE/);
    assert.deepEqual((trainer['command'] as string[]).slice(-4, -2), ['--device', 'cpu']);
    assert.deepEqual(written.services['attune-worker']!['command'], ['worker', '--role', 'llm']);
    assert.ok(!text.includes('!reset'));
  });
});
