import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';
import { REPO_ROOT } from '../../src/paths.js';

/** `engines` in package.json is a promise to users: every locked package must run on the oldest Node it names. */

interface LockedPackage {
  version?: string;
  engines?: { node?: string } | string[];
  optional?: boolean;
}

const packageJson = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, LockedPackage>;
};

describe('package.json engines', () => {
  const range = packageJson.engines.node;
  const oldest = semver.minVersion(range);

  it('names a Node range this machine satisfies', () => {
    assert.ok(oldest, `engines.node ${range} is not a range`);
    assert.ok(semver.satisfies(process.versions.node, range), `Node ${process.versions.node} is outside ${range}`);
  });

  it('holds for every locked package: none needs a newer Node than the oldest one engines.node allows', () => {
    assert.ok(oldest);
    const tooNew = Object.entries(lock.packages)
      .filter(([path]) => path !== '')
      .flatMap(([path, pkg]) => {
        const node = Array.isArray(pkg.engines) ? undefined : pkg.engines?.node;
        return node && !semver.satisfies(oldest, node) ? [`${path}@${pkg.version}: node ${node}`] : [];
      });
    assert.deepEqual(tooNew, [], `engines.node is ${range}, but these packages need more`);
  });
});

describe('the Node.js LTS the tests run on (scripts/node-lts.sh)', () => {
  const script = readFileSync(join(REPO_ROOT, 'scripts', 'node-lts.sh'), 'utf8');
  const lts = /^NODE_LTS_VERSION=(\S+)$/m.exec(script)?.[1];

  it('is one exact version, within engines.node, and the one the README names', () => {
    assert.ok(lts && semver.valid(lts), `NODE_LTS_VERSION in scripts/node-lts.sh: ${lts}`);
    assert.ok(semver.satisfies(lts, packageJson.engines.node), `Node ${lts} is outside engines.node`);
    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
    assert.ok(readme.includes(`Node.js ${lts}`), `README.md does not name Node.js ${lts}`);
  });

  it('is what npm test and the demo run on', () => {
    for (const file of ['test.sh', 'demo.sh']) {
      const text = readFileSync(join(REPO_ROOT, 'scripts', file), 'utf8');
      assert.match(text, /^\. scripts\/node-lts\.sh$/m, `scripts/${file} does not source scripts/node-lts.sh`);
      assert.match(text, /NODE_LTS_BIN/, `scripts/${file} does not run on $NODE_LTS_BIN`);
    }
  });

  it('is what the Docker image runs: the Dockerfile, Compose and .env.example default to its major, the stack test builds it', () => {
    assert.ok(lts);
    const image = `node:${semver.major(lts)}-bookworm-slim`;
    const defaults = {
      Dockerfile: /^ARG NODE_IMAGE=(\S+)$/m,
      'docker-compose.yml': /NODE_IMAGE: \$\{NODE_IMAGE:-([^}]+)\}/,
      '.env.example': /^NODE_IMAGE=(\S+)$/m,
    };
    for (const [file, pattern] of Object.entries(defaults)) {
      const found = pattern.exec(readFileSync(join(REPO_ROOT, file), 'utf8'))?.[1];
      assert.equal(found, image, `${file}'s default base image`);
    }
    const stack = readFileSync(join(REPO_ROOT, 'scripts', 'stack', 'env.sh'), 'utf8');
    assert.match(
      stack,
      /^\. "\$\(dirname "\$\{BASH_SOURCE\[0\]\}"\)\/\.\.\/node-lts\.sh"$/m,
      'scripts/stack/env.sh does not source node-lts.sh',
    );
    assert.match(stack, /^STACK_NODE_VERSION=\$NODE_LTS_VERSION$/m, 'the stack test builds another Node');
  });
});

describe('package-lock.json', () => {
  it('records every optional platform package its dependencies name, so `npm ci` accepts it', () => {
    const missing = Object.entries(lock.packages).flatMap(([path, pkg]) => {
      const optional = (pkg as { optionalDependencies?: Record<string, string> }).optionalDependencies ?? {};
      return Object.keys(optional)
        .filter((name) => !lock.packages[`node_modules/${name}`] && !lock.packages[`${path}/node_modules/${name}`])
        .map((name) => `${name} (optional dependency of ${path || 'the project'})`);
    });
    assert.deepEqual(missing, []);
  });

  it('installs one protobufjs for every @temporalio package: history protos decoded by one copy are Types to the others', () => {
    // Nested copies break `historyFromJSON` (replay) with "type must be a Type", an instanceof across copies.
    const nested = Object.keys(lock.packages).filter((path) =>
      /^node_modules\/@temporalio\/[^/]+\/node_modules\/protobufjs$/.test(path),
    );
    assert.deepEqual(nested, []);
    const needed = Object.entries(lock.packages)
      .filter(([path]) => path.startsWith('node_modules/@temporalio/'))
      .flatMap(([, pkg]) => {
        const wanted = (pkg as { dependencies?: Record<string, string> }).dependencies?.protobufjs;
        return wanted ? [wanted] : [];
      });
    const hoisted = lock.packages['node_modules/protobufjs']?.version;
    assert.ok(hoisted, 'protobufjs is installed at the top level');
    for (const wanted of needed)
      assert.ok(semver.satisfies(hoisted, wanted), `protobufjs ${hoisted} does not satisfy ${wanted}`);
  });
});
