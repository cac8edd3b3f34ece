// Prints Attune's custom search attributes as Name=Type lines, the types as the Temporal CLI names them.
import { devServerSearchAttributeArgs } from '../../src/temporal/searchAttributes.js';

console.log(
  devServerSearchAttributeArgs()
    .filter((_, i) => i % 2 === 1)
    .join('\n'),
);
