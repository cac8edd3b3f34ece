#!/usr/bin/env node
'use strict';
// Runs the TypeScript sources directly (no build step): tsx compiles on load.
require('tsx/cjs');
const { main, describeError } = require('../src/cli/main.ts');
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`attune: ${describeError(error)}\n`);
    // Native runtimes (Temporal core, llama.cpp) may hold threads: the command is done, so leave.
    process.exit(1);
  },
);
