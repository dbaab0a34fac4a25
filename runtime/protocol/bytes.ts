/**
 * Joining byte chunks: the one copy loop behind every reader that collects a
 * line or a bounded body in parts — the line splitter, the API's and the ACP
 * gateway's request bodies, the MCP and Ollama HTTP clients and the ACP
 * JSON-RPC reader. Each reader enforces its own bound before it joins.
 */

/**
 * The parts joined into one fresh array (never one of the parts, so a caller
 * may reuse its chunks). `total` is their summed length when the caller
 * already counted it.
 */
export function concatBytes(
  parts: readonly Uint8Array[],
  total = parts.reduce((n, p) => n + p.length, 0),
): Uint8Array {
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
