/**
 * The Attune version evaluation manifests record. Workflow code cannot read package.json, so the
 * version is written here too; a test holds it equal to package.json's.
 */
export const ATTUNE_VERSION = '0.1.0';
