import { readFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { reportDirKey } from '../artifacts/keys.js';
import { FileArtifactStore, type ArtifactStore } from '../artifacts/store.js';

/**
 * Where a report page is written by default: in a file store, at its key (`reports/<target>`);
 * with an object store, in `<home>/reports/<target>` (a page is opened from a disk), and then it is
 * copied into the store as well (storeReportFiles).
 */
export function defaultReportDir(store: ArtifactStore, home: string, target: string): string {
  return store instanceof FileArtifactStore
    ? join(store.root, reportDirKey(target))
    : join(resolve(home), reportDirKey(target));
}

/**
 * Copies a written page and its PNGs into an object store under `reports/<target>/`; returns where
 * the page lies there. A file store holds the files already (or was given another folder): null.
 */
export async function storeReportFiles(store: ArtifactStore, target: string, files: string[]): Promise<string | null> {
  if (store instanceof FileArtifactStore) return null;
  const dir = reportDirKey(target);
  let page: string | null = null;
  for (const file of files) {
    const key = `${dir}/${basename(file)}`;
    if (file.endsWith('.html')) {
      await store.putText(key, await readFile(file, 'utf8'));
      page ??= store.locate(key);
    } else await store.putBytes(key, await readFile(file));
  }
  return page;
}
