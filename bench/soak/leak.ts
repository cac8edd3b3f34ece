/**
 * A planted leak (ATTUNE_SOAK_PLANT=rss): loaded into every node child by NODE_OPTIONS, it keeps
 * 2 MiB more every second in the `attune worker --role llm` process only, so the RSS check must fail.
 */
const args = process.argv;
const role = args[args.indexOf('--role') + 1];
if (args.includes('worker') && role === 'llm') {
  const kept: Buffer[] = [];
  setInterval(() => kept.push(Buffer.alloc(8 * 2 ** 20, 1)), 1000).unref();
}

export {};
