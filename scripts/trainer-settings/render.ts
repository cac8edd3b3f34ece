/**
 * Renders the orchestrator's view of the trainer settings from trainer/settings.schema.json
 * (written by `python -m attune_trainer.service.settings_schema`): the zod schemas of the hyperparameters
 * and the LoRA spec, and, in a file of its own so workflows can import it without zod, the table
 * of live-settable hyperparameters. Run by
 * scripts/generate-trainer-settings.ts (`npm run generate:settings`).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

interface Property {
  type?: string;
  anyOf?: Property[];
  const?: unknown;
  items?: Property;
  default?: unknown;
  description?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  'x-live'?: boolean;
  'x-needs'?: string;
}

interface ObjectSchema {
  properties: Record<string, Property>;
  required?: string[];
}

export interface TrainerSettingsSchema {
  algorithms: string[];
  Hyperparameters: ObjectSchema;
  LoraSpec: ObjectSchema;
}

const REQUIREMENTS = ['critic'];

export const SCHEMA_FILE = 'trainer/settings.schema.json';
export const ZOD_FILE = 'src/core/training/trainerSettings.generated.ts';
export const LIVE_FILE = 'src/core/training/liveHyperparameters.generated.ts';

const HEADER = (command: string) =>
  `// Generated from ${SCHEMA_FILE} by ${command}: do not edit.\n` +
  "// The trainer's pydantic models (Hyperparameters, LoraSpec) are the source of these settings.\n";

function bounds(p: Property): string {
  return [
    p.exclusiveMinimum !== undefined ? `.gt(${p.exclusiveMinimum})` : '',
    p.minimum !== undefined ? `.min(${p.minimum})` : '',
    p.exclusiveMaximum !== undefined ? `.lt(${p.exclusiveMaximum})` : '',
    p.maximum !== undefined ? `.max(${p.maximum})` : '',
  ].join('');
}

function zodOf(name: string, p: Property): string {
  if (p.anyOf) {
    const nonNull = p.anyOf.filter((branch) => branch.type !== 'null');
    const inner =
      nonNull.length === 1 ? zodOf(name, nonNull[0]!) : `z.union([${nonNull.map((b) => zodOf(name, b)).join(', ')}])`;
    return nonNull.length < p.anyOf.length ? `${inner}.nullable()` : inner;
  }
  if (typeof p.const === 'string') return `z.literal('${p.const}')`;
  switch (p.type) {
    case 'number':
      return `z.number()${bounds(p)}`;
    case 'integer':
      return `z.number().int()${bounds(p)}`;
    case 'boolean':
      return 'z.boolean()';
    case 'string':
      return 'z.string()';
    case 'array':
      if (!p.items) throw new Error(`${name}: an array without items`);
      return `z.array(${zodOf(name, p.items)})`;
    default:
      throw new Error(`${name}: type ${JSON.stringify(p.type)} has no zod counterpart here`);
  }
}

/** A field's help text, written once in the trainer's model; a default that only the trainer applies is named in it. */
function helpText(p: Property, trainerDefault: boolean): string {
  const fromTrainer =
    trainerDefault && p.default !== undefined ? `the trainer's default: ${JSON.stringify(p.default)}` : '';
  return [p.description ?? '', fromTrainer].filter(Boolean).join('; ');
}

/** A string literal as Prettier writes it: single quotes unless the text holds more of them than double ones. */
function quoted(text: string): string {
  const escaped = text.replace(/\\/g, '\\\\');
  const singles = (text.match(/'/g) ?? []).length;
  const doubles = (text.match(/"/g) ?? []).length;
  return singles > doubles ? `"${escaped.replace(/"/g, '\\"')}"` : `'${escaped.replace(/'/g, "\\'")}'`;
}

/** The help texts of one model, by field, in a table of their own so that the schema's lines stay short. */
function helpTable(name: string, schema: ObjectSchema, withDefaults: boolean): string {
  const required = new Set(schema.required ?? []);
  const rows = Object.entries(schema.properties)
    .map(([field, p]) => [field, helpText(p, !withDefaults && !required.has(field))] as const)
    .filter(([, text]) => text !== '')
    .map(([field, text]) => {
      const line = `  ${field}: ${quoted(text)},`;
      // Prettier's way with a line over 120 columns: the value on a line of its own.
      return line.length > 120 ? `  ${field}:\n    ${quoted(text)},\n` : `${line}\n`;
    });
  return `const ${name} = {\n${rows.join('')}} as const;\n\n`;
}

/** Every field optional where the trainer has a default (it fills it in); `withDefaults` writes the default instead. */
function zodObject(schema: ObjectSchema, withDefaults: boolean, help: string): string {
  const required = new Set(schema.required ?? []);
  const fields = Object.entries(schema.properties).map(([name, p]) => {
    let tail = '';
    if (!required.has(name))
      tail = withDefaults && p.default !== undefined ? `.default(${JSON.stringify(p.default)})` : '.optional()';
    const described = helpText(p, !withDefaults && !required.has(name)) !== '' ? `.describe(${help}.${name})` : '';
    return `  ${name}: ${zodOf(name, p)}${described}${tail},\n`;
  });
  return `z.strictObject({\n${fields.join('')}})`;
}

function liveRule(name: string, p: Property): string {
  const type = p.anyOf?.find((branch) => branch.type !== 'null') ?? p;
  if (type.type !== 'number' && type.type !== 'integer') throw new Error(`${name}: only numbers can be live`);
  const needs = p['x-needs'];
  if (needs !== undefined && !REQUIREMENTS.includes(needs)) throw new Error(`${name}: unknown requirement ${needs}`);
  const parts = [
    type.type === 'integer' ? 'int: true' : '',
    type.minimum !== undefined ? `min: ${type.minimum}` : '',
    type.maximum !== undefined ? `max: ${type.maximum}` : '',
    type.exclusiveMinimum !== undefined ? `gt: ${type.exclusiveMinimum}` : '',
    type.exclusiveMaximum !== undefined ? `lt: ${type.exclusiveMaximum}` : '',
    needs !== undefined ? `needs: '${needs}'` : '',
  ].filter(Boolean);
  return `  ${name}: { ${parts.join(', ')} },\n`;
}

/** The two generated files' contents, by path. */
export function renderTrainerSettings(schema: TrainerSettingsSchema): Record<string, string> {
  const command = 'npm run generate:settings';
  const live = Object.entries(schema.Hyperparameters.properties).filter(([, p]) => p['x-live']);
  const zod =
    HEADER(command) +
    "import { z } from 'zod';\n\n" +
    `/** The trainer's algorithm names (RunCreate.algorithm). */\n` +
    `export const TRAINER_ALGORITHMS = ${JSON.stringify(schema.algorithms).replace(/"/g, "'").replace(/,/g, ', ')} as const;\n\n` +
    helpTable('HYPERPARAMETER_HELP', schema.Hyperparameters, false) +
    `export const trainerHyperparametersSchema = ${zodObject(schema.Hyperparameters, false, 'HYPERPARAMETER_HELP')};\n\n` +
    helpTable('LORA_HELP', schema.LoraSpec, true) +
    `export const trainerLoraSchema = ${zodObject(schema.LoraSpec, true, 'LORA_HELP')};\n`;
  const table =
    HEADER(command) +
    '// No zod here: the workflow bundle imports this table (see liveSet.ts).\n\n' +
    '/** Hyperparameters an operator may change on a live run, with their bounds and what they need. */\n' +
    `export const LIVE_HYPERPARAMETER_RULES = {\n${live.map(([name, p]) => liveRule(name, p)).join('')}} as const;\n`;
  return { [ZOD_FILE]: zod, [LIVE_FILE]: table };
}

export function readTrainerSettingsSchema(root: string): TrainerSettingsSchema {
  return JSON.parse(readFileSync(join(root, SCHEMA_FILE), 'utf8')) as TrainerSettingsSchema;
}
