import { join, resolve } from 'node:path';
import type { ArtifactsConfig } from '../config/artifactsSchema.js';
import { S3ArtifactStore } from './s3Store.js';
import { parseS3Url } from '../core/s3Url.js';
import { FileArtifactStore, type ArtifactStore } from './store.js';

/** What opening a store needs of the config: its `artifacts` section, and `home` for the default directory. */
export interface ArtifactStoreConfig {
  home: string;
  artifacts: ArtifactsConfig;
}

/** The directory of a file store (`artifacts.dir`, default `<home>/artifacts`). */
export function artifactsDir(config: ArtifactStoreConfig): string {
  return resolve(config.artifacts.dir ?? join(config.home, 'artifacts'));
}

/**
 * The artifact store the config names: an S3-compatible bucket when `artifacts.url` is set (its
 * credentials read from `env` by their standard names when a request first needs them), else a
 * directory. Every command, worker and test builds its store here.
 */
export function openArtifactStore(config: ArtifactStoreConfig, env: NodeJS.ProcessEnv = process.env): ArtifactStore {
  const { artifacts } = config;
  if (artifacts.url === undefined) return new FileArtifactStore(artifactsDir(config));
  const location = parseS3Url(artifacts.url);
  // The config schema checked it already; a config built some other way is checked here.
  if (typeof location === 'string') throw new Error(`artifacts.url: ${location}`);
  return new S3ArtifactStore({
    location,
    endpoint: artifacts.endpoint,
    region: artifacts.region,
    pathStyle: artifacts.pathStyle ?? artifacts.endpoint !== undefined,
    env,
  });
}
