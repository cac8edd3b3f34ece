/** Writes docs/configuration-reference.md from the config's declarations (`npm run generate:config-docs`). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REFERENCE_FILE, renderConfigReference } from './config-reference/render.js';

const root = process.cwd();
void renderConfigReference(root).then((text) => writeFileSync(join(root, REFERENCE_FILE), text));
