import { isIP } from 'node:net';
import { connect, type ConnectionOptions } from 'node:tls';
import type { TemporalConnectionOptions } from './connectionOptions.js';

/** How long a server may take to refuse our certificate once the handshake is done (TLS 1.3 sends that alert late). */
const LATE_ALERT_MS = 500;

function hostAndPort(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  return { host, port: Number(address.slice(colon + 1)) };
}

/** What a TLS failure means for the config, by OpenSSL / Node error code. */
function explain(error: NodeJS.ErrnoException): string {
  const code = error.code ?? '';
  const hint =
    code === 'ERR_TLS_CERT_ALTNAME_INVALID'
      ? 'the certificate is for another name: set temporal.tls.serverName (TEMPORAL_TLS_SERVER_NAME)'
      : /SELF_SIGNED|ISSUER|VERIFY_LEAF|UNTRUSTED/.test(code)
        ? 'the server certificate is not signed by temporal.tls.caFile (TEMPORAL_TLS_CA) or the system roots'
        : /CERTIFICATE_REQUIRED|HANDSHAKE_FAILURE|BAD_CERTIFICATE|UNKNOWN_CA/.test(code)
          ? 'the server refused the client certificate, or wants one: temporal.tls.certFile and keyFile (TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY)'
          : /WRONG_VERSION|PACKET_LENGTH|RECORD/.test(code)
            ? 'the server does not speak TLS: set temporal.tls to false'
            : null;
  // OpenSSL's message carries its source file and line; its reason is the readable part.
  const what = (error as { reason?: unknown }).reason ?? error.message.trim();
  return `TLS handshake failed (${String(what)})${hint ? `: ${hint}` : ''}`;
}

interface Handshake {
  /** The server answered with TLS: a finished handshake or a TLS alert. */
  tls: boolean;
  /** Why it failed; null when it went through or nothing answered in time. */
  error: NodeJS.ErrnoException | null;
}

function handshake(options: ConnectionOptions, timeoutMs: number): Promise<Handshake> {
  return new Promise((resolveProbe) => {
    const socket = connect({ ...options, ALPNProtocols: ['h2'] });
    let done = false;
    let secured = false;
    const finish = (error: NodeJS.ErrnoException | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolveProbe({ tls: secured || /ALERT/.test(error?.code ?? ''), error });
    };
    const timer = setTimeout(() => finish(null), timeoutMs);
    socket.once('error', (error) => finish(error));
    socket.once('close', () => finish(null));
    socket.once('secureConnect', () => {
      secured = true;
      setTimeout(() => finish(null), LATE_ALERT_MS);
    });
  });
}

/**
 * Why a connection to a Temporal server failed at the TLS layer, for the error message: the gRPC
 * client only says it could not connect before its deadline. Null when the handshake goes through
 * or the server does not answer at all.
 */
export async function tlsProblem(options: TemporalConnectionOptions, timeoutMs = 3000): Promise<string | null> {
  const { host, port } = hostAndPort(options.address);
  if (!options.tls) {
    // Plain gRPC to a TLS endpoint fails the same dull way; say so when the server completes a handshake.
    const outcome = await handshake({ host, port, rejectUnauthorized: false }, timeoutMs);
    return outcome.tls ? 'the server speaks TLS: set temporal.tls (or TEMPORAL_TLS_CA)' : null;
  }
  const { serverRootCACertificate, clientCertPair, serverNameOverride } = options.tls;
  const servername = serverNameOverride ?? (isIP(host) ? undefined : host);
  const outcome = await handshake(
    {
      host,
      port,
      ...(servername !== undefined ? { servername } : {}),
      ...(serverRootCACertificate ? { ca: serverRootCACertificate } : {}),
      ...(clientCertPair ? { cert: clientCertPair.crt, key: clientCertPair.key } : {}),
    },
    timeoutMs,
  );
  return outcome.error ? explain(outcome.error) : null;
}

/** The first Node.js release that refuses an IP address as a TLS server name (DEP0123 turned error). */
const NODE_REFUSING_IP_SERVER_NAME = 26;

/**
 * Why a TLS connection to an IP address cannot work on this Node.js, or null: the gRPC client
 * (@grpc/grpc-js) sends the address as the TLS server name unless one is set, and Node 26 refuses an
 * IP there, so the client only ever reports that it could not connect before its deadline.
 */
export function ipServerNameProblem(
  options: TemporalConnectionOptions,
  nodeVersion: string = process.versions.node,
): string | null {
  if (!options.tls || options.tls.serverNameOverride !== undefined) return null;
  if (!isIP(hostAndPort(options.address).host)) return null;
  if (Number(nodeVersion.split('.')[0]) < NODE_REFUSING_IP_SERVER_NAME) return null;
  return `over TLS to an IP address, Node.js ${nodeVersion} refuses the address as the TLS server name that the gRPC client sends: set temporal.tls.serverName (TEMPORAL_TLS_SERVER_NAME) to a name in the server's certificate, or give temporal.address as a host name`;
}
