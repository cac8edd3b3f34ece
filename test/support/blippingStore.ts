import { FileArtifactStore, type ConditionalWriteOptions } from '../../src/artifacts/store.js';

/** A directory store whose next `failures` conditional writes after `after` good ones fail (a store blip). */
export class BlippingStore extends FileArtifactStore {
  writes = 0;
  constructor(
    root: string,
    private readonly after: number,
    private failures: number,
  ) {
    super(root);
  }
  override async putJsonIf(
    key: string,
    value: unknown,
    expected: string | null,
    options?: ConditionalWriteOptions,
  ): Promise<string | null> {
    if (++this.writes > this.after && this.failures > 0) {
      this.failures--;
      throw Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO' });
    }
    return super.putJsonIf(key, value, expected, options);
  }
}
