import { DefaultFailureConverter } from '@temporalio/common';

/**
 * Loaded by path (the SDK's `failureConverterPath`), in workers, clients and the workflow sandbox,
 * only when payloads are encrypted: failure messages and stack traces move into an encoded
 * payload, because an error may quote a reply (an unparseable simulator answer, for one).
 */
export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
