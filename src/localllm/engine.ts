/**
 * One loaded GGUF model and a pool of context sequences, shared by every request.
 *
 * Requests are independent: each borrows a sequence, clears its KV cache, renders the whole
 * conversation with the model's own chat template, generates, and returns the sequence. Sequences
 * of one context are decoded in the same batch by node-llama-cpp, so `parallel` requests share the
 * CPU instead of queueing behind each other; the rest wait for a free sequence.
 */
import { randomInt } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { basename } from 'node:path';
import type {
  ChatHistoryItem,
  ChatWrapper,
  Llama,
  LlamaContext,
  LlamaContextSequence,
  LlamaModel,
} from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import type { Logger } from '../log.js';
import { GrammarCache, type OutputConstraint } from './grammar.js';
import { HttpError } from './protocol.js';

export interface EngineOptions {
  modelPath: string;
  /** Tokens per sequence; defaults to the model's training context, capped at 8192. */
  contextSize?: number;
  /** Sequences decoded at once. */
  parallel?: number;
  /** CPU threads for llama.cpp; see DEFAULT_THREADS. */
  threads?: number;
  logger: Logger;
}

export interface GenerationMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface GenerationRequest {
  messages: GenerationMessage[];
  /** 0 = greedy. */
  temperature: number;
  topP: number;
  /** 0 = the whole vocabulary (OpenAI's behaviour). */
  topK: number;
  minP: number;
  /** undefined: as many as the context leaves. */
  maxTokens: number | undefined;
  /** undefined: a fresh random seed per choice. */
  seed: number | undefined;
  stop: string[];
  presencePenalty: number;
  frequencyPenalty: number;
  constraint: OutputConstraint;
  /** Independent samples (OpenAI `n`). */
  n: number;
}

export interface GenerationChoice {
  content: string;
  finishReason: 'stop' | 'length';
  completionTokens: number;
}
export interface GenerationResult {
  choices: GenerationChoice[];
  promptTokens: number;
  warnings: string[];
}

/**
 * On this project's 2-core machines one thread decodes SmolLM2-135M faster than two
 * (measured ~85 vs ~50 tokens/s): for a model this small, thread synchronisation costs more than the
 * second core brings, and more threads than cores is far worse still (llama.cpp threads spin-wait).
 * So: never more than the cores, and at most half of them by default, leaving the rest to the
 * workers and the trainer.
 */
const DEFAULT_THREADS = Math.max(1, Math.floor(availableParallelism() / 2));
const DEFAULT_MAX_CONTEXT = 8192;

type NodeLlamaCpp = typeof import('node-llama-cpp', { with: { 'resolution-mode': 'import' } });

class AbortError extends Error {
  constructor() {
    super('request aborted');
    this.name = 'AbortError';
  }
}

/** Free sequences and the requests waiting for one, first come first served. */
class SequencePool {
  private readonly waiters: Array<{
    resolve: (s: LlamaContextSequence) => void;
    reject: (e: Error) => void;
    signal: AbortSignal;
    onAbort: () => void;
  }> = [];

  constructor(private readonly free: LlamaContextSequence[]) {}

  get waiting(): number {
    return this.waiters.length;
  }

  acquire(signal: AbortSignal): Promise<LlamaContextSequence> {
    if (signal.aborted) return Promise.reject(new AbortError());
    const ready = this.free.pop();
    if (ready) return Promise.resolve(ready);
    return new Promise((resolve, reject) => {
      const waiter = {
        resolve,
        reject,
        signal,
        // A client that gave up while queued leaves the queue at once.
        onAbort: () => {
          const at = this.waiters.indexOf(waiter);
          if (at >= 0) this.waiters.splice(at, 1);
          reject(new AbortError());
        },
      };
      signal.addEventListener('abort', waiter.onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  release(sequence: LlamaContextSequence): void {
    const next = this.waiters.shift();
    if (!next) {
      this.free.push(sequence);
      return;
    }
    next.signal.removeEventListener('abort', next.onAbort);
    next.resolve(sequence);
  }
}

export class LocalLlmEngine {
  private readonly grammars: GrammarCache;
  private readonly pool: SequencePool;
  private active = 0;

  private constructor(
    private readonly lib: NodeLlamaCpp,
    private readonly llama: Llama,
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    private readonly chatWrapper: ChatWrapper,
    readonly modelName: string,
    readonly parallel: number,
    readonly threads: number,
    /** Where start-up time went: runtime (binary + backend), model file, context (KV cache). */
    readonly loadTimings: { runtimeMs: number; modelMs: number; contextMs: number; totalMs: number },
  ) {
    this.grammars = new GrammarCache(llama);
    const sequences: LlamaContextSequence[] = [];
    for (let i = 0; i < parallel; i++) sequences.push(context.getSequence());
    this.pool = new SequencePool(sequences);
  }

  static async load(options: EngineOptions): Promise<LocalLlmEngine> {
    const started = performance.now();
    const parallel = options.parallel ?? 2;
    if (!Number.isInteger(parallel) || parallel < 1)
      throw new Error(`parallel must be a positive integer, got ${parallel}`);
    // More threads than cores makes llama.cpp's spinning threads fight each other for the cores.
    const threads = Math.min(options.threads ?? DEFAULT_THREADS, availableParallelism());
    if (!Number.isInteger(threads) || threads < 1)
      throw new Error(`threads must be a positive integer, got ${options.threads}`);
    // node-llama-cpp is ESM-only; this project compiles to CommonJS, so it is loaded dynamically.
    const lib: NodeLlamaCpp = await import('node-llama-cpp');
    const { logger } = options;
    const llama = await lib.getLlama({
      // CPU only, prebuilt binaries only (npm's @node-llama-cpp/<platform>): never probe GPUs,
      // never download llama.cpp sources, never compile. A missing binary fails fast instead.
      gpu: false,
      build: 'never',
      usePrebuiltBinaries: true,
      skipDownload: true,
      progressLogs: false,
      maxThreads: threads,
      logLevel: lib.LlamaLogLevel.warn,
      logger: (level, message) => {
        const text = message.trim();
        if (text === '') return;
        if (level === lib.LlamaLogLevel.error || level === lib.LlamaLogLevel.fatal)
          logger.error('llama.cpp', { detail: text });
        else logger.debug('llama.cpp', { level, detail: text });
      },
    });
    const runtimeAt = performance.now();
    try {
      const model = await llama.loadModel({ modelPath: options.modelPath });
      const modelAt = performance.now();
      const contextSize = options.contextSize ?? Math.min(model.trainContextSize, DEFAULT_MAX_CONTEXT);
      const context = await model.createContext({ sequences: parallel, contextSize, threads });
      const contextAt = performance.now();
      // The model's own Jinja template, rendered exactly; node-llama-cpp's "auto" would pick its
      // ChatML look-alike, which adds a BOS token and drops SmolLM2's default system prompt.
      // A GGUF without a template falls back to node-llama-cpp's guess from the model's name and architecture.
      let chatWrapper: ChatWrapper | null = null;
      try {
        chatWrapper = lib.resolveChatWrapper(model, { type: 'jinjaTemplate', warningLogs: false });
      } catch (error) {
        logger.warn('chat template unusable, guessing one', {
          error: error instanceof Error ? error.message : String(error),
        });
      }
      chatWrapper ??= lib.resolveChatWrapper(model, { type: 'auto', warningLogs: false });
      if (!chatWrapper) throw new Error(`no chat template could be resolved for ${options.modelPath}`);
      const name = basename(options.modelPath).replace(/\.gguf$/i, '');
      const timings = {
        runtimeMs: Math.round(runtimeAt - started),
        modelMs: Math.round(modelAt - runtimeAt),
        contextMs: Math.round(contextAt - modelAt),
        totalMs: Math.round(performance.now() - started),
      };
      return new LocalLlmEngine(lib, llama, model, context, chatWrapper, name, parallel, threads, timings);
    } catch (error) {
      await llama.dispose();
      throw error;
    }
  }

  get contextSize(): number {
    return this.context.contextSize;
  }

  get chatTemplate(): string {
    return this.chatWrapper.wrapperName;
  }

  stats(): { active: number; queued: number; grammarsCached: number } {
    return { active: this.active, queued: this.pool.waiting, grammarsCached: this.grammars.size };
  }

  private history(messages: GenerationMessage[]): ChatHistoryItem[] {
    const items: ChatHistoryItem[] = messages.map((m): ChatHistoryItem =>
      m.role === 'assistant' ? { type: 'model', response: [m.content] } : { type: m.role, text: m.content },
    );
    // The slot the model fills in: the template's generation prompt.
    items.push({ type: 'model', response: [] });
    return items;
  }

  /** Prompt tokens exactly as LlamaChat will evaluate them (same wrapper, same history). */
  private countPromptTokens(history: ChatHistoryItem[]): number {
    const { contextText } = this.chatWrapper.generateContextState({ chatHistory: history });
    return contextText.tokenize(this.model.tokenizer).length;
  }

  /** Rejects with HttpError for requests the model cannot serve, AbortError when `signal` fires. */
  async generate(request: GenerationRequest, signal: AbortSignal): Promise<GenerationResult> {
    const resolved = await this.grammars.get(request.constraint);
    const history = this.history(request.messages);
    const promptTokens = this.countPromptTokens(history);
    const room = this.contextSize - promptTokens;
    if (room < 1 || (request.maxTokens !== undefined && request.maxTokens > room)) {
      throw new HttpError(
        400,
        `This model's maximum context length is ${this.contextSize} tokens. However, you requested ${promptTokens + (request.maxTokens ?? 1)} tokens ` +
          `(${promptTokens} in the messages, ${request.maxTokens ?? 1} in the completion). Please reduce the length of the messages or completion.`,
        'messages',
        'context_length_exceeded',
      );
    }
    // Capping at the room left keeps generation inside the context: no context shift, no unbounded runs.
    const maxTokens = request.maxTokens ?? room;
    const baseSeed = request.seed ?? randomInt(0, 2 ** 32);
    const choices = await Promise.all(
      Array.from({ length: request.n }, (_, i) =>
        this.generateOne(
          request,
          history,
          maxTokens,
          // llama.cpp seeds are uint32; node-llama-cpp's own fallback (the current second) would give every request in the same second the same sample.
          Number(BigInt.asUintN(32, BigInt(baseSeed) + BigInt(i))),
          resolved?.grammar,
          signal,
        ),
      ),
    );
    return { choices, promptTokens, warnings: resolved?.warnings ?? [] };
  }

  private async generateOne(
    request: GenerationRequest,
    history: ChatHistoryItem[],
    maxTokens: number,
    seed: number,
    grammar: import('node-llama-cpp', { with: { 'resolution-mode': 'import' } }).LlamaGrammar | undefined,
    signal: AbortSignal,
  ): Promise<GenerationChoice> {
    const sequence = await this.pool.acquire(signal);
    this.active++;
    try {
      // Independence: nothing from the previous request may leak through the KV cache.
      await sequence.clearHistory();
      const chat = new this.lib.LlamaChat({ contextSequence: sequence, chatWrapper: this.chatWrapper });
      const meter = sequence.tokenMeter.getState();
      try {
        const penalised = request.presencePenalty !== 0 || request.frequencyPenalty !== 0;
        const result = await chat.generateResponse(history, {
          signal,
          maxTokens,
          temperature: request.temperature,
          // OpenAI semantics by default: top_p only, over the whole vocabulary; node-llama-cpp's defaults (top_k 40, top_p 0.95) would differ.
          topP: request.topP,
          topK: request.topK,
          minP: request.minP,
          seed,
          // node-llama-cpp applies a 1.1 repeat penalty by default; OpenAI applies none unless asked.
          repeatPenalty: penalised
            ? { penalty: 1, presencePenalty: request.presencePenalty, frequencyPenalty: request.frequencyPenalty }
            : false,
          ...(request.stop.length > 0 ? { customStopTriggers: request.stop } : {}),
          ...(grammar ? { grammar } : {}),
        });
        const used = sequence.tokenMeter.diff(meter);
        return {
          content: result.response,
          finishReason: result.metadata.stopReason === 'maxTokens' ? 'length' : 'stop',
          completionTokens: used.usedOutputTokens,
        };
      } finally {
        chat.dispose({ disposeSequence: false });
      }
    } finally {
      this.active--;
      this.pool.release(sequence);
    }
  }

  async dispose(): Promise<void> {
    await this.llama.dispose();
  }
}

export function isAbortError(error: unknown): boolean {
  return error instanceof AbortError || (error instanceof Error && error.name === 'AbortError');
}
