/** Writes the generated trainer-settings files from trainer/settings.schema.json (`npm run generate:settings`). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readTrainerSettingsSchema, renderTrainerSettings } from './trainer-settings/render.js';

const root = process.cwd();
for (const [path, text] of Object.entries(renderTrainerSettings(readTrainerSettingsSchema(root))))
  writeFileSync(join(root, path), text);
