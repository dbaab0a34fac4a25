/**
 * The one codec for text the Agent database stores raw-deflated [PF-4]: journal event bodies
 * (`run_events.body_z`, with their Run's preset dictionary) and completed answers
 * (`turns.assistant_z`). What it enforces: a text is stored deflated only when that saves at
 * least a quarter; inflating stops as soon as the output passes the caller's bound (input fed
 * in 1 KiB steps, so a crafted stream costs at most ~1 MiB of work past it) and the bytes must
 * be strict UTF-8. A stream deflated without a dictionary never refers to one, so it inflates
 * the same when one is given.
 */
import { deflateSync, Inflate } from "fflate";

const ENCODER = new TextEncoder();
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

/** Raw-deflate bytes of `text`, or null when deflating would save less than a quarter. */
export function deflateText(text: string, dictionary?: Uint8Array): Uint8Array | null {
  const bytes = ENCODER.encode(text);
  const z = deflateSync(bytes, dictionary ? { dictionary } : {});
  return z.length <= bytes.length * 0.75 ? z : null;
}

/** Input fed to the inflater per step. */
const INFLATE_STEP = 1024;

/**
 * The text `z` inflates to, or null when it is not a complete raw-deflate stream, inflates to
 * more than `maxBytes`, or is not strict UTF-8.
 */
export function inflateText(
  z: Uint8Array,
  maxBytes: number,
  dictionary?: Uint8Array,
): string | null {
  const parts: Uint8Array[] = [];
  let size = 0;
  let ended = false;
  try {
    const inflater = new Inflate(dictionary ? { dictionary } : {}, (chunk, final) => {
      size += chunk.length;
      if (size > maxBytes) throw new Error("over the bound");
      parts.push(chunk);
      ended = final;
    });
    for (let at = 0; at < z.length; at += INFLATE_STEP) {
      const end = Math.min(at + INFLATE_STEP, z.length);
      inflater.push(z.subarray(at, end), end === z.length);
    }
    if (!ended) return null;
    const out = new Uint8Array(size);
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return STRICT_UTF8.decode(out);
  } catch {
    return null;
  }
}
