import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { findTemporalCli } from '../../src/temporal/cliBinary.js';
import { SIMULATOR_TAGS } from '../../src/core/prompts/simulator.js';
import type { Scenario } from '../../src/core/scenario.js';

const run = promisify(execFile);

async function temporalCli(args: string[]): Promise<string> {
  const env = { ...process.env };
  for (const name of Object.keys(env)) if (name.startsWith('TEMPORAL_CODEC')) delete env[name];
  const { stdout } = await run(findTemporalCli(), args, { env, maxBuffer: 256 * 1024 * 1024 });
  return stdout;
}

/** Every string in a JSON value, and the UTF-8 text of those that are base64 (proto3 JSON writes payload bytes so). */
function stringsWithDecodedBase64(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') {
    out.push(value);
    if (value.length >= 4 && /^[A-Za-z0-9+/]+={0,2}$/.test(value))
      out.push(Buffer.from(value, 'base64').toString('utf8'));
  } else if (Array.isArray(value)) {
    for (const v of value) stringsWithDecodedBase64(v, out);
  } else if (typeof value === 'object' && value !== null) {
    for (const v of Object.values(value)) stringsWithDecodedBase64(v, out);
  }
  return out;
}

/**
 * A workflow's history as an operator without the keys sees it: `temporal workflow show`, no
 * codec, as JSON with every base64 payload decoded (the JSON output carries payload bytes in
 * base64), plus the detailed text output (which prints JSON payloads as text).
 */
export async function historyWithoutCodec(address: string, workflowId: string): Promise<string> {
  const connection = ['-w', workflowId, '--address', address, '--namespace', 'default'];
  const json = await temporalCli(['workflow', 'show', ...connection, '--output', 'json']);
  const detailed = await temporalCli(['workflow', 'show', ...connection, '--detailed']);
  return [json, ...stringsWithDecodedBase64(JSON.parse(json)), detailed].join('\n');
}

/** Texts a dialogue's history would hold in plain text: the hidden intention, prompts and replies. */
export function dialogueMarkers(scenario: Scenario): Record<string, string> {
  return {
    'hidden intention': scenario.hiddenIntention,
    "the user's first message": scenario.firstMessage ?? scenario.hiddenIntention,
    'the persona (simulator prompt)': `Name: ${scenario.persona.name}`,
    'the simulator prompt': SIMULATOR_TAGS.analysis,
    "the policy's reply": 'It sounds like that has been weighing on you',
    "the simulated user's reply": "I guess so. It's the way nobody noticed",
  };
}

/** The markers found in `text`, by what they are. */
export function plaintextFound(text: string, markers: Record<string, string>): string[] {
  return Object.entries(markers)
    .filter(([, marker]) => text.includes(marker) || text.includes(JSON.stringify(marker).slice(1, -1)))
    .map(([what]) => what);
}
