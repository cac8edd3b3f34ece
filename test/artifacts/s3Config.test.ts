import assert from 'node:assert/strict';
import { openArtifactStore } from '../../src/artifacts/openArtifactStore.js';
import { S3ArtifactStore } from '../../src/artifacts/s3Store.js';
import { parseS3Url } from '../../src/core/s3Url.js';
import { FileArtifactStore } from '../../src/artifacts/store.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { rolloutSettingsFromConfig } from '../../src/config/rolloutSettingsFromConfig.js';

describe('artifacts.url: the S3 store in the config', () => {
  it('reads s3://BUCKET/PREFIX, and says what is wrong with a bad one', () => {
    assert.deepEqual(parseS3Url('s3://attune/runs'), { bucket: 'attune', prefix: 'runs' });
    assert.deepEqual(parseS3Url('s3://attune/a/b/'), { bucket: 'attune', prefix: 'a/b' });
    assert.deepEqual(parseS3Url('s3://attune'), { bucket: 'attune', prefix: '' });
    assert.match(parseS3Url('http://attune/runs') as string, /not an s3:\/\/BUCKET\/PREFIX URL/);
    assert.match(parseS3Url('s3://Attune_Bucket/x') as string, /not a valid bucket name/);
    assert.match(parseS3Url('s3://attune/../x') as string, /not a valid prefix/);
  });

  it('--set artifacts.url and artifacts.endpoint open an S3 store; without them a directory', () => {
    const set = [
      'home=/tmp/attune-s3-config',
      'artifacts.url=s3://attune/runs',
      'artifacts.endpoint=http://127.0.0.1:9000',
    ];
    const config = loadConfig({ env: {}, set });
    assert.equal(config.artifacts.region, 'us-east-1');
    const store = openArtifactStore(config, {});
    assert.ok(store instanceof S3ArtifactStore);
    assert.equal(store.location, 's3://attune/runs');
    assert.equal(store.locate('runs/x/metrics.jsonl'), 's3://attune/runs/runs/x/metrics.jsonl');
    store.close();
    const plain = openArtifactStore(loadConfig({ env: {}, set: ['home=/tmp/attune-s3-config'] }), {});
    assert.ok(plain instanceof FileArtifactStore);
    assert.equal(plain.location, '/tmp/attune-s3-config/artifacts');
  });

  it('ATTUNE_ARTIFACTS_URL and ATTUNE_ARTIFACTS_ENDPOINT set the store (the compose stack passes them), empty ones do not', () => {
    const env = { ATTUNE_ARTIFACTS_URL: 's3://attune/runs', ATTUNE_ARTIFACTS_ENDPOINT: 'http://object-store:9000' };
    const config = loadConfig({ env, set: [] });
    assert.equal(config.artifacts.url, 's3://attune/runs');
    assert.equal(config.artifacts.endpoint, 'http://object-store:9000');
    const unset = loadConfig({ env: { ATTUNE_ARTIFACTS_URL: '', ATTUNE_ARTIFACTS_ENDPOINT: '' }, set: [] });
    assert.equal(unset.artifacts.url, undefined);
    assert.equal(unset.artifacts.endpoint, undefined);
  });

  it('AWS_REGION sets the region', () => {
    const config = loadConfig({ env: { AWS_REGION: 'eu-west-1' }, set: ['artifacts.url=s3://attune'] });
    assert.equal(config.artifacts.region, 'eu-west-1');
  });

  it('rejects a bad URL, url with dir, and endpoint or pathStyle without url, naming the key', () => {
    const load = (set: string[]) => () => loadConfig({ env: {}, set });
    assert.throws(
      load(['artifacts.url=s3://A/x']),
      (e: unknown) => e instanceof ConfigError && /artifacts\.url/.test(e.message),
    );
    assert.throws(
      load(['artifacts.url=s3://attune', 'artifacts.dir=/tmp/x']),
      /set artifacts\.url or artifacts\.dir, not both/,
    );
    assert.throws(load(['artifacts.endpoint=http://127.0.0.1:9000']), /artifacts\.endpoint needs artifacts\.url/);
    assert.throws(load(['artifacts.pathStyle=true']), /artifacts\.pathStyle needs artifacts\.url/);
  });

  it("the rollouts carry the store as a wait names it, and the transcript writes' retries", () => {
    const config = loadConfig({
      env: {},
      set: [
        'artifacts.url=s3://attune/runs',
        'artifacts.endpoint=http://127.0.0.1:9000',
        'artifacts.retry.maximumAttempts=4',
      ],
    });
    const settings = rolloutSettingsFromConfig(config);
    assert.equal(settings.artifactStore?.name, 's3://attune/runs at http://127.0.0.1:9000');
    assert.equal(settings.artifactStore?.retry.maximumAttempts, 4);
    const aws = rolloutSettingsFromConfig(loadConfig({ env: {}, set: ['artifacts.url=s3://attune'] }));
    assert.equal(aws.artifactStore?.name, 's3://attune at AWS S3 (us-east-1)');
    assert.equal(aws.artifactStore?.retry.maximumAttempts, 10);
  });
});
