import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { METRIC_NAMES } from '../../src/core/metricNames.js';
import { REPO_ROOT } from '../../src/paths.js';

interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; w: number };
  targets?: { expr: string }[];
}

const dashboard = JSON.parse(readFileSync(join(REPO_ROOT, 'deploy', 'grafana', 'attune.json'), 'utf8')) as {
  panels: Panel[];
};
const trainerSource = readFileSync(
  join(REPO_ROOT, 'trainer', 'src', 'attune_trainer', 'engine', 'prometheus.py'),
  'utf8',
);
const SERIES_SUFFIX = /_(total|bucket|count|sum)$/;

describe('Grafana dashboard (deploy/grafana/attune.json)', function () {
  const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));

  it('queries only metrics that Attune and its trainer export', () => {
    const workerNames = new Set<string>(Object.values(METRIC_NAMES));
    const named = exprs.flatMap(({ panel, expr }) =>
      [...expr.matchAll(/\b(attune_[a-z_]+)/g)].map((m) => ({ panel, name: m[1] as string })),
    );
    assert.ok(named.length > 10);
    for (const { panel, name } of named) {
      if (name.startsWith('attune_trainer_')) {
        const base = name.replace(/_(bucket|count|sum)$/, '');
        assert.ok(trainerSource.includes(`"${base}`), `panel "${panel}": ${name} is not a trainer metric`);
      } else {
        assert.ok(workerNames.has(name.replace(SERIES_SUFFIX, '')), `panel "${panel}": ${name} is not a worker metric`);
      }
    }
  });

  it('has a panel per area, each with a query, unique ids, inside 24 columns', () => {
    const ids = dashboard.panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length);
    for (const p of dashboard.panels) {
      assert.ok(p.gridPos.x + p.gridPos.w <= 24, `panel "${p.title}" is wider than the grid`);
      if (p.type !== 'row') assert.ok((p.targets ?? []).length > 0, `panel "${p.title}" has no query`);
    }
    for (const prefix of ['attune_llm_', 'attune_rollouts', 'temporal_', 'attune_trainer_'])
      assert.ok(
        exprs.some(({ expr }) => expr.includes(prefix)),
        `no panel queries ${prefix}`,
      );
  });
});
