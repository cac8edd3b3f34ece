import { readFileSync } from 'node:fs';
import {
  connect,
  constants,
  createSecureServer,
  type ClientHttp2Session,
  type Http2SecureServer,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
  type ServerHttp2Session,
  type ServerHttp2Stream,
} from 'node:http2';
import type { AddressInfo } from 'node:net';

export interface TlsGrpcProxyOptions {
  /** host:port of the plain gRPC server behind it (the dev server). */
  upstream: string;
  /** PEM files of the proxy's server certificate. */
  certFile: string;
  keyFile: string;
  /** When set, clients must present a certificate signed by this CA (mTLS). */
  clientCaFile?: string;
  /** When set, every call must carry `authorization: Bearer <apiKey>`; others get UNAUTHENTICATED. */
  apiKey?: string;
}

const GRPC_UNAUTHENTICATED = 16;

/** Copies headers without HTTP/2 pseudo-headers (`:status`, `:path`, …), which each side sets itself. */
function regularHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers))
    if (!name.startsWith(':') && value !== undefined) out[name] = value;
  return out;
}

/**
 * A TLS (optionally mTLS and API key checking) front for a plain gRPC server, as a Temporal Cloud
 * namespace or a cluster behind a TLS terminator looks to a client: `temporal server start-dev`
 * has no TLS of its own. Each HTTP/2 stream is forwarded to the upstream with its headers, body
 * and trailers (grpc-status arrives as a trailer). Binds to 127.0.0.1 only.
 */
export class TlsGrpcProxy {
  /** gRPC methods forwarded (after the API key check when there is one), in arrival order. */
  readonly forwarded: string[] = [];
  /** gRPC methods refused for a missing or wrong API key. */
  readonly refused: string[] = [];
  /** TLS handshakes that failed on the server side (no or wrong client certificate, …). */
  readonly tlsErrors: string[] = [];
  private upstreamSession: ClientHttp2Session | null = null;
  private readonly sessions = new Set<ServerHttp2Session>();

  private constructor(
    private readonly server: Http2SecureServer,
    private readonly options: TlsGrpcProxyOptions,
  ) {}

  static async start(options: TlsGrpcProxyOptions): Promise<TlsGrpcProxy> {
    const server = createSecureServer({
      cert: readFileSync(options.certFile),
      key: readFileSync(options.keyFile),
      ...(options.clientCaFile
        ? { ca: readFileSync(options.clientCaFile), requestCert: true, rejectUnauthorized: true }
        : {}),
    });
    const proxy = new TlsGrpcProxy(server, options);
    server.on('stream', (stream, headers) => proxy.handle(stream, headers));
    server.on('session', (session) => {
      proxy.sessions.add(session);
      session.on('close', () => proxy.sessions.delete(session));
      session.on('error', () => undefined);
    });
    server.on('tlsClientError', (error) => proxy.tlsErrors.push(error.message));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get address(): string {
    return `127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const session of this.sessions) session.destroy();
    this.upstreamSession?.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private upstream(): ClientHttp2Session {
    if (!this.upstreamSession || this.upstreamSession.closed || this.upstreamSession.destroyed) {
      const session = connect(`http://${this.options.upstream}`);
      session.on('error', () => undefined);
      this.upstreamSession = session;
    }
    return this.upstreamSession;
  }

  private handle(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    stream.on('error', () => undefined);
    const method = String(headers[':path'] ?? '')
      .split('/')
      .pop() as string;
    if (this.options.apiKey !== undefined && headers.authorization !== `Bearer ${this.options.apiKey}`) {
      this.refused.push(method);
      stream.resume();
      stream.respond(
        {
          ':status': 200,
          'content-type': 'application/grpc',
          'grpc-status': String(GRPC_UNAUTHENTICATED),
          'grpc-message': 'no valid API key (test TLS front)',
        },
        { endStream: true },
      );
      return;
    }
    this.forwarded.push(method);
    const request = this.upstream().request({
      ':method': headers[':method'] ?? 'POST',
      ':path': headers[':path'] ?? '/',
      ...regularHeaders(headers),
    });
    request.on('error', () => {
      if (!stream.closed) stream.close(constants.NGHTTP2_INTERNAL_ERROR);
    });
    let trailers: OutgoingHttpHeaders = {};
    request.on('response', (response, flags) => {
      const status = response[':status'] ?? 200;
      // A trailers-only answer (an error before any message) ends the stream with its headers.
      const endStream = (flags & constants.NGHTTP2_FLAG_END_STREAM) !== 0;
      stream.respond(
        { ':status': status, ...regularHeaders(response) },
        endStream ? { endStream } : { waitForTrailers: true },
      );
    });
    request.on('trailers', (received) => {
      trailers = regularHeaders(received);
    });
    request.on('data', (chunk: Buffer) => stream.write(chunk));
    request.on('end', () => {
      if (!stream.writableEnded) stream.end();
    });
    stream.on('wantTrailers', () => stream.sendTrailers(trailers));
    request.on('close', () => {
      if (request.rstCode !== constants.NGHTTP2_NO_ERROR && !stream.closed) stream.close(request.rstCode);
    });
    stream.on('close', () => {
      if (!request.closed) request.close(constants.NGHTTP2_CANCEL);
    });
    stream.pipe(request);
  }
}
