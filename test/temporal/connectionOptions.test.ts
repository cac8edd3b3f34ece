import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { temporalConnectionOptions } from '../../src/temporal/connectionOptions.js';

const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

function files(): { dir: string; ca: string; cert: string; key: string; notPem: string } {
  const dir = mkdtempSync(join(tmpdir(), 'attune-tls-opts-'));
  const at = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };
  return { dir, ca: at('ca.pem', PEM), cert: at('c.pem', PEM), key: at('k.pem', PEM), notPem: at('x.txt', 'hello') };
}

function yamlFile(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'attune-cfg-')), 'config.yaml');
  writeFileSync(file, text);
  return file;
}

describe('temporal.tls and temporal.apiKeyEnv', () => {
  it('certFile without keyFile (and the other way round) is a config error naming the missing field', () => {
    assert.throws(
      () => loadConfig({ env: {}, set: ['temporal.tls.certFile=/c.pem'] }),
      (error: unknown) =>
        error instanceof ConfigError && /temporal\.tls\.keyFile: certFile is set without keyFile/.test(error.message),
    );
    const file = yamlFile('temporal:\n  tls:\n    keyFile: k.pem\n');
    assert.throws(
      () => loadConfig({ file, env: {} }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.message.includes(file) &&
        /temporal\.tls\.certFile: keyFile is set without certFile/.test(error.message),
    );
    assert.throws(() => loadConfig({ env: {}, set: ['temporal.tls.caFil=x'] }), /temporal\.tls\.caFil: unknown key/);
    assert.throws(() => loadConfig({ env: {}, set: ['temporal.apiKeyEnv=not a name'] }), /temporal\.apiKeyEnv/);
  });

  it('takes the Temporal CLI variables, on top of `tls: true` in a file', () => {
    const config = loadConfig({
      file: yamlFile('temporal:\n  address: t:7233\n  tls: true\n'),
      env: {
        TEMPORAL_TLS_CA: '/ca.pem',
        TEMPORAL_TLS_CERT: '/c.pem',
        TEMPORAL_TLS_KEY: '/k.pem',
        TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
        TEMPORAL_API_KEY_ENV: 'MY_TEMPORAL_KEY',
      },
    });
    assert.deepEqual(config.temporal.tls, {
      caFile: '/ca.pem',
      certFile: '/c.pem',
      keyFile: '/k.pem',
      serverName: 'temporal.internal',
    });
    assert.equal(config.temporal.apiKeyEnv, 'MY_TEMPORAL_KEY');
    assert.equal(loadConfig({ env: {} }).temporal.tls, undefined);
  });

  it('reads each file into the connection options', () => {
    const f = files();
    const config = loadConfig({
      env: {},
      set: [
        `temporal.tls.caFile=${f.ca}`,
        `temporal.tls.certFile=${f.cert}`,
        `temporal.tls.keyFile=${f.key}`,
        'temporal.tls.serverName=n',
      ],
    });
    const { options, warnings } = temporalConnectionOptions(config.temporal, 'h:1', {});
    assert.deepEqual(warnings, []);
    assert.equal(options.address, 'h:1');
    assert.equal(options.apiKey, undefined);
    assert.equal(options.tls?.serverRootCACertificate?.toString(), PEM);
    assert.equal(options.tls?.clientCertPair?.crt.toString(), PEM);
    assert.equal(options.tls?.clientCertPair?.key.toString(), PEM);
    assert.equal(options.tls?.serverNameOverride, 'n');
    assert.equal(temporalConnectionOptions(loadConfig({ env: {} }).temporal, 'h:1', {}).options.tls, undefined);
    assert.deepEqual(
      temporalConnectionOptions(loadConfig({ env: {}, set: ['temporal.tls=true'] }).temporal, 'h:1', {}).options.tls,
      {},
    );
  });

  it('a missing, unreadable or non-PEM file is an error naming the field and the file', () => {
    const f = files();
    const missing = join(f.dir, 'nope.pem');
    const tls = (set: string[]) => loadConfig({ env: {}, set }).temporal;
    assert.throws(
      () => temporalConnectionOptions(tls([`temporal.tls.caFile=${missing}`]), 'h:1', {}),
      (error: unknown) =>
        error instanceof ConfigError && error.message === `temporal.tls.caFile: cannot read ${missing}: no such file`,
    );
    assert.throws(
      () =>
        temporalConnectionOptions(
          tls([`temporal.tls.certFile=${f.cert}`, `temporal.tls.keyFile=${missing}`]),
          'h:1',
          {},
        ),
      new RegExp(`temporal\\.tls\\.keyFile: cannot read ${missing}`),
    );
    assert.throws(
      () => temporalConnectionOptions(tls([`temporal.tls.caFile=${f.notPem}`]), 'h:1', {}),
      new RegExp(`temporal\\.tls\\.caFile: ${f.notPem} is not a PEM file`),
    );
  });

  it('an API key turns TLS on unless tls is false (then a warning); a missing variable is named', () => {
    const apiKeyConfig = (set: string[] = []) =>
      loadConfig({ env: {}, set: ['temporal.apiKeyEnv=T_KEY', ...set] }).temporal;
    const on = temporalConnectionOptions(apiKeyConfig(), 'ns.tmprl.cloud:7233', { T_KEY: ' secret ' });
    assert.equal(on.options.apiKey, 'secret');
    assert.deepEqual(on.options.tls, {});
    assert.deepEqual(on.warnings, []);
    const off = temporalConnectionOptions(apiKeyConfig(['temporal.tls=false']), 'h:1', { T_KEY: 'secret' });
    assert.equal(off.options.tls, undefined);
    assert.match(off.warnings.join('\n'), /temporal\.tls is false: the API key from T_KEY goes to h:1 unencrypted/);
    assert.throws(
      () => temporalConnectionOptions(apiKeyConfig(), 'h:1', {}),
      /temporal\.apiKeyEnv: the environment variable T_KEY is not set/,
    );
    assert.throws(() => temporalConnectionOptions(apiKeyConfig(), 'h:1', { T_KEY: '' }), /T_KEY is empty/);
  });
});
