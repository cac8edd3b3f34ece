/**
 * Timing figures for the local server on this machine (not a test: run it by hand).
 *   node --import tsx test/localllm/measure.ts [--threads N] [--parallel N] [--context-size N] [--runs N]
 * Prints one JSON object: load time, decode speed, a ~120-token json_schema latency, and throughput
 * with `parallel` requests at once.
 */
import { parseArgs } from 'node:util';
import OpenAI from 'openai';
import { ANALYSIS_JSON_SCHEMA } from '../../src/core/analysis.js';
import { createLogger } from '../../src/log.js';
import { findSmolLm2Gguf } from '../../src/localllm/modelPath.js';
import { startLocalLlmServer } from '../../src/localllm/server.js';
import { REPO_ROOT } from '../../src/paths.js';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      threads: { type: 'string' },
      parallel: { type: 'string' },
      runs: { type: 'string' },
      'context-size': { type: 'string' },
    },
  });
  const runs = Number(values.runs ?? 5);
  const parallel = Number(values.parallel ?? 2);
  const server = await startLocalLlmServer({
    modelPath: findSmolLm2Gguf(REPO_ROOT),
    parallel,
    ...(values.threads ? { threads: Number(values.threads) } : {}),
    ...(values['context-size'] ? { contextSize: Number(values['context-size']) } : {}),
    logger: createLogger({ component: 'measure' }, 'warn'),
  });
  const rssAfterLoad = process.memoryUsage().rss;
  const client = new OpenAI({ baseURL: server.url, apiKey: 'local', maxRetries: 0 });
  const timed = async (body: OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming) => {
    const t0 = performance.now();
    const c = await client.chat.completions.create(body);
    return {
      ms: performance.now() - t0,
      completion: c.usage?.completion_tokens ?? 0,
      prompt: c.usage?.prompt_tokens ?? 0,
      finish: c.choices[0]?.finish_reason,
      content: c.choices[0]?.message.content ?? '',
    };
  };
  try {
    // Warm-up: first call pays one-off costs (page faults, allocator growth).
    await timed({ model: 'm', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 8, temperature: 0 });

    const plain = [];
    for (let i = 0; i < runs; i++) {
      plain.push(
        await timed({
          model: 'm',
          messages: [{ role: 'user', content: 'Write a long, detailed story about a lighthouse keeper.' }],
          max_tokens: 200,
          temperature: 0.7,
          seed: i,
        }),
      );
    }
    // The real simulator analysis schema, unbounded strings included, on a realistic prompt.
    const analysis = [];
    for (let i = 0; i < runs; i++) {
      analysis.push(
        await timed({
          model: 'm',
          messages: [
            {
              role: 'system',
              content:
                'You are Dana, 34, a nurse who just lost her job. You are avoidant and tired. Analyse the assistant reply from your point of view as JSON: assistantIntent, goalFit, innerThoughts, emotionChange (integer from -10 to 10).',
            },
            {
              role: 'user',
              content:
                'Assistant reply: "That sounds really hard. Losing a job you cared about hurts. What has been the hardest part so far?"',
            },
          ],
          max_tokens: 300,
          temperature: 0.7,
          seed: 100 + i,
          response_format: {
            type: 'json_schema',
            json_schema: {
              name: 'user_analysis',
              strict: true,
              schema: ANALYSIS_JSON_SCHEMA as unknown as Record<string, unknown>,
            },
          },
        }),
      );
    }
    const t0 = performance.now();
    const together = await Promise.all(
      Array.from({ length: parallel }, (_, i) =>
        timed({
          model: 'm',
          messages: [{ role: 'user', content: 'Write a long, detailed story about a lighthouse keeper.' }],
          max_tokens: 200,
          temperature: 0.7,
          seed: 50 + i,
        }),
      ),
    );
    const wall = performance.now() - t0;
    const sum = (xs: Array<{ completion: number }>) => xs.reduce((s, x) => s + x.completion, 0);
    process.stdout.write(
      `${JSON.stringify(
        {
          threads: values.threads ?? 'default',
          parallel,
          loadMs: Math.round(server.loadMs),
          contextSize: server.contextSize,
          rssMbAfterLoad: Math.round(rssAfterLoad / 2 ** 20),
          plain: {
            promptTokens: plain[0]?.prompt,
            medianMs: Math.round(median(plain.map((p) => p.ms))),
            tokensPerSecond: +(sum(plain) / (plain.reduce((s, p) => s + p.ms, 0) / 1000)).toFixed(1),
            completionTokens: plain.map((p) => p.completion),
          },
          jsonSchema: {
            promptTokens: analysis[0]?.prompt,
            completionTokens: analysis.map((a) => a.completion),
            latencyMs: analysis.map((a) => Math.round(a.ms)),
            medianMs: Math.round(median(analysis.map((a) => a.ms))),
            tokensPerSecond: +(sum(analysis) / (analysis.reduce((s, a) => s + a.ms, 0) / 1000)).toFixed(1),
            finish: analysis.map((a) => a.finish),
            parsed: analysis.map((a) => {
              try {
                JSON.parse(a.content);
                return true;
              } catch {
                return false;
              }
            }),
            sample: analysis[0]?.content,
          },
          concurrent: {
            requests: parallel,
            wallMs: Math.round(wall),
            aggregateTokensPerSecond: +(sum(together) / (wall / 1000)).toFixed(1),
          },
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    await server.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
