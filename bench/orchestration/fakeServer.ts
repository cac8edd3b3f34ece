import type { Server } from 'node:http';
import type { FakeOpenAIServer } from '../../test/support/fakeOpenAI.js';

/**
 * The fake's HTTP server sends a 1 s keep-alive hint (right for short-lived test clients). Node's
 * fetch (undici) subtracts a 1 s safety threshold from such hints, so every connection would be
 * closed after one request and each LLM call would pay a new TCP connection, unlike a real
 * inference server (uvicorn: 5 s, vLLM/OpenAI: longer). The benchmark raises the hint and counts
 * connections (reported per variant); the returned function reads the count.
 */
export function tuneFakeServer(fake: FakeOpenAIServer, keepAliveMs: number): () => number {
  let connections = 0;
  const server = (fake as unknown as { server: Server }).server;
  server.keepAliveTimeout = keepAliveMs;
  server.on('connection', () => {
    connections++;
  });
  return () => connections;
}
