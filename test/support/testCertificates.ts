import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** PEM files of a throwaway CA and the certificates it signed, in a temp directory. */
export interface TestCertificates {
  dir: string;
  caCert: string;
  caKey: string;
  /** For localhost and 127.0.0.1. */
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** A second CA that signed nothing here: trusting it alone must fail. */
  otherCaCert: string;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('/usr/bin/openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

function makeCa(dir: string, name: string): void {
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '2',
    '-subj',
    `/CN=${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
    '-keyout',
    `${name}-key.pem`,
    '-out',
    `${name}-cert.pem`,
  ]);
}

/** A leaf certificate signed by the CA `ca`, with the extensions in `extensions` (an openssl extfile). */
function makeLeaf(dir: string, ca: string, name: string, extensions: string): void {
  writeFileSync(join(dir, `${name}.ext`), extensions);
  openssl(dir, [
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-subj',
    `/CN=${name}`,
    '-keyout',
    `${name}-key.pem`,
    '-out',
    `${name}.csr`,
  ]);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}-cert.pem`,
    '-CAkey',
    `${ca}-key.pem`,
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
    '-out',
    `${name}-cert.pem`,
  ]);
}

export function makeTestCertificates(): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'attune-tls-'));
  makeCa(dir, 'ca');
  makeCa(dir, 'other-ca');
  makeLeaf(
    dir,
    'ca',
    'server',
    'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n',
  );
  makeLeaf(dir, 'ca', 'client', 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n');
  const at = (file: string) => join(dir, file);
  return {
    dir,
    caCert: at('ca-cert.pem'),
    caKey: at('ca-key.pem'),
    serverCert: at('server-cert.pem'),
    serverKey: at('server-key.pem'),
    clientCert: at('client-cert.pem'),
    clientKey: at('client-key.pem'),
    otherCaCert: at('other-ca-cert.pem'),
  };
}
