import { execFileSync } from 'node:child_process';

/**
 * The multi-host suite's hosts: one network namespace each (`attune-mh-<name>`), joined by a bridge in a
 * namespace of its own (`attune-mh-net`, so no firewall of the machine's sees the traffic between hosts)
 * on 10.231.0.0/24. The test process reaches every host through the veth `attmh0` (10.231.0.1) from the
 * root namespace. Nothing else on the machine is touched.
 */
export const HOSTS = {
  temporal: '10.231.0.10',
  s3: '10.231.0.11',
  trainer: '10.231.0.12',
  'vllm-1': '10.231.0.13',
  'vllm-2': '10.231.0.14',
  'workers-a': '10.231.0.15',
  'workers-b': '10.231.0.16',
  users: '10.231.0.17',
  client: '10.231.0.18',
} as const;
export type HostName = keyof typeof HOSTS;

const PREFIX_LENGTH = 24;
const ROOT_ADDRESS = '10.231.0.1';
const BRIDGE_NAMESPACE = 'attune-mh-net';
const BRIDGE = 'br0';
const ROOT_LINK = 'attmh0';

export function namespaceOf(host: HostName): string {
  return `attune-mh-${host}`;
}

/** The host's end of its link, in the bridge's namespace (at most 15 characters: `attmh-workers-a`). */
function linkOf(host: HostName): string {
  return `attmh-${host}`;
}

function ip(args: string[]): void {
  try {
    execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    throw new Error(`ip ${args.join(' ')}: ${stderr || String(error)}`);
  }
}

function ipIn(namespace: string, args: string[]): void {
  ip(['-n', namespace, ...args]);
}

function existingNamespaces(): string[] {
  return execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
    .split('\n')
    .map((line) => line.split(' ')[0] ?? '')
    .filter(Boolean);
}

/** Removes the suite's namespaces and root link, leftovers of a crashed run included; the rest is left alone. */
export function removeNetwork(): void {
  const ours = new Set<string>([BRIDGE_NAMESPACE, ...Object.keys(HOSTS).map((h) => namespaceOf(h as HostName))]);
  for (const namespace of existingNamespaces()) if (ours.has(namespace)) ip(['netns', 'del', namespace]);
  // The root end of the uplink goes with its peer; a half-made one may remain.
  const links = execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' });
  if (!new RegExp(`^\\d+: ${ROOT_LINK}[@:]`, 'm').test(links)) return;
  try {
    ip(['link', 'del', ROOT_LINK]);
  } catch (error) {
    // A namespace's removal takes its veth peers down asynchronously: the link may go between the
    // listing and the delete.
    if (!/Cannot find device/.test(String(error))) throw error;
  }
}

/** Builds the bridge, the root uplink and every host's namespace with its address and `lo` up. */
export function createNetwork(): void {
  removeNetwork();
  ip(['netns', 'add', BRIDGE_NAMESPACE]);
  ipIn(BRIDGE_NAMESPACE, ['link', 'set', 'lo', 'up']);
  ipIn(BRIDGE_NAMESPACE, ['link', 'add', BRIDGE, 'type', 'bridge']);
  ipIn(BRIDGE_NAMESPACE, ['link', 'set', BRIDGE, 'up']);
  ip(['link', 'add', ROOT_LINK, 'type', 'veth', 'peer', 'name', 'uplink', 'netns', BRIDGE_NAMESPACE]);
  ipIn(BRIDGE_NAMESPACE, ['link', 'set', 'uplink', 'master', BRIDGE, 'up']);
  ip(['addr', 'add', `${ROOT_ADDRESS}/${PREFIX_LENGTH}`, 'dev', ROOT_LINK]);
  ip(['link', 'set', ROOT_LINK, 'up']);
  for (const [host, address] of Object.entries(HOSTS) as [HostName, string][]) {
    const namespace = namespaceOf(host);
    ip(['netns', 'add', namespace]);
    ipIn(namespace, ['link', 'set', 'lo', 'up']);
    ipIn(BRIDGE_NAMESPACE, ['link', 'add', linkOf(host), 'type', 'veth', 'peer', 'name', 'eth0', 'netns', namespace]);
    ipIn(BRIDGE_NAMESPACE, ['link', 'set', linkOf(host), 'master', BRIDGE, 'up']);
    ipIn(namespace, ['addr', 'add', `${address}/${PREFIX_LENGTH}`, 'dev', 'eth0']);
    ipIn(namespace, ['link', 'set', 'eth0', 'up']);
  }
}

/** Cuts (or restores) a host's link to the bridge: its processes keep running, unreachable and unable to reach. */
export function setLink(host: HostName, state: 'up' | 'down'): void {
  ipIn(BRIDGE_NAMESPACE, ['link', 'set', linkOf(host), state]);
}

/**
 * Cuts (or restores) the routes from `host` to `to` alone: a partition, the host's other links working. A
 * blackhole route drops what the host sends there, so its connections to `to` stall and none can be made.
 */
export function setRoute(host: HostName, to: HostName, state: 'up' | 'down'): void {
  ipIn(namespaceOf(host), ['route', state === 'down' ? 'add' : 'del', 'blackhole', `${HOSTS[to]}/32`]);
}
