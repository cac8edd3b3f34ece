import { AesGcmPayloadCodec } from '../../codec/aesGcmCodec.js';
import { CODEC_KEYS_ENV, configuredKeyRing } from '../../codec/keys.js';
import {
  CODEC_SERVER_DEFAULT_PORT,
  CODEC_SERVER_TOKEN_ENV,
  isLoopbackHost,
  LOCAL_UI_ORIGINS,
  startCodecServer,
} from '../../codec/server.js';
import { createLogger } from '../../log.js';
import { loadConfig } from '../../config/load.js';
import { CONFIG_FLAGS, flagHelp, intOption, parseCommand, UsageError, type Flags } from '../args.js';
import { untilSignal } from '../context.js';

export const CODEC_SERVER_FLAGS = {
  port: { type: 'string', value: 'N', help: `port (default ${CODEC_SERVER_DEFAULT_PORT}; 0 picks a free one)` },
  host: {
    type: 'string',
    value: 'HOST',
    help: `interface to listen on (default 127.0.0.1); any other than loopback\nneeds ${CODEC_SERVER_TOKEN_ENV}`,
  },
  'cors-origin': {
    type: 'string',
    multiple: true,
    value: 'URL',
    help: `browser origin allowed to call it (repeatable; default\n${LOCAL_UI_ORIGINS.join(' and ')}, the dev server's UI)`,
  },
  ...CONFIG_FLAGS,
  config: { ...CONFIG_FLAGS.config, help: 'YAML config file, for temporal.codec.keysFile' },
} as const satisfies Flags;

export const CODEC_SERVER_HELP = `attune codec-server [options]

Serves the payload codec over HTTP (the Temporal codec server protocol: POST /encode and
/decode), so the Temporal web UI and \`temporal workflow show --codec-endpoint URL\` can show
payloads that Attune encrypted. Keys come from the file named by ${CODEC_KEYS_ENV}, else
by temporal.codec.keysFile of --config (see SECURITY.md). Runs until Ctrl-C.

In the web UI, set the codec server endpoint (the "Data Encoder" settings) to the URL it prints.

${flagHelp(CODEC_SERVER_FLAGS)}

Environment: ${CODEC_KEYS_ENV} (or temporal.codec.keysFile), ${CODEC_SERVER_TOKEN_ENV} (when set, every request
must send "Authorization: Bearer <token>"; the CLI's --codec-auth, or a UI that passes its
access token).`;

export async function codecServerCommand(argv: string[]): Promise<number> {
  const { values } = parseCommand(argv, CODEC_SERVER_FLAGS, false);
  if (values.help) {
    process.stdout.write(`${CODEC_SERVER_HELP}\n`);
    return 0;
  }
  const port = intOption(values.port, 'port') ?? CODEC_SERVER_DEFAULT_PORT;
  if (port < 0 || port > 65535) throw new UsageError(`--port must be between 0 and 65535, got ${port}`);
  const host = values.host ?? '127.0.0.1';
  const token = process.env[CODEC_SERVER_TOKEN_ENV] || undefined;
  if (!isLoopbackHost(host) && token === undefined) {
    throw new UsageError(
      `--host ${host} would let anyone who reaches it decrypt payloads: set ${CODEC_SERVER_TOKEN_ENV}, or keep the default 127.0.0.1`,
    );
  }
  const corsOrigins = values['cors-origin'] ?? LOCAL_UI_ORIGINS;
  for (const origin of corsOrigins) {
    if (!/^https?:\/\/[^/\s]+$/.test(origin))
      throw new UsageError(`--cors-origin ${origin}: expected an origin such as http://127.0.0.1:8233 (no path)`);
  }
  const config =
    values.config !== undefined || values.set !== undefined
      ? loadConfig({ ...(values.config !== undefined ? { file: values.config } : {}), set: values.set ?? [] })
      : null;
  const ring = configuredKeyRing(process.env, config?.temporal.codec?.keysFile);
  if (!ring)
    throw new UsageError(
      `${CODEC_KEYS_ENV} is not set (nor temporal.codec.keysFile): point it at the payload keys file (see SECURITY.md)`,
    );
  const log = createLogger({ component: 'codec-server' });
  const server = await startCodecServer({
    codec: new AesGcmPayloadCodec(ring),
    host,
    port,
    corsOrigins,
    ...(token !== undefined ? { token } : {}),
    log,
  });
  process.stdout.write(
    [
      `Codec server listening on ${server.url}`,
      `  Keys:     ${ring.source} (${ring.keys.size}; encrypting with "${ring.encryptKeyId}")`,
      `  Origins:  ${corsOrigins.join(', ')}`,
      `  Token:    ${token !== undefined ? `required (${CODEC_SERVER_TOKEN_ENV})` : 'none'}`,
      `  CLI:      temporal workflow show -w ID --codec-endpoint ${server.url}${token !== undefined ? ' --codec-auth "Bearer $' + CODEC_SERVER_TOKEN_ENV + '"' : ''}`,
      'Press Ctrl-C to stop.',
      '',
    ].join('\n'),
  );
  const signal = await untilSignal();
  log.info('stopping', { signal });
  await server.close();
  return 0;
}
