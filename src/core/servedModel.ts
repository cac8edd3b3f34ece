/**
 * The model an endpoint says it serves under the configured name (`GET /v1/models`), beside that
 * name in an evaluation's manifest: vLLM names the weights it loaded (`root`), a hosted API its
 * owner. `unavailable` says why the endpoint could not tell (not listed, unreachable, not a list).
 */
export type ServedModel = { id: string; root: string | null; ownedBy: string | null } | { unavailable: string };
