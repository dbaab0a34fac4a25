/**
 * The picker's entries [UI-7, MB-10]: ready and chat-only models once each with
 * badges, unavailable ones labelled with their reason, unsupported ones hidden.
 */
import { assertEquals } from "../helpers/assert.ts";
import { modelLabel, pickable } from "../../ui/lib/model_picker.ts";
import type { ModelProfile } from "../../ui/lib/types.ts";

const m = (
  id: string,
  state: string,
  caps: string[],
  available = true,
  reason: string | null = null,
) =>
  ({
    id,
    state,
    capabilities: caps,
    available,
    reason,
    window: 32768,
    isDefault: false,
  }) as ModelProfile;

Deno.test("the picker offers ready and chat-only models once, labels badges and reasons, hides unsupported", () => {
  const list = [
    m("qwen3.5:2b", "ready", ["completion", "tools", "thinking"]),
    m("qwen3.5:2b", "ready", ["completion", "tools", "thinking"]),
    m("gemma3:1b", "chat_only", ["completion"]),
    m("deepseek-r1:1.5b", "chat_only", ["completion", "thinking"]),
    m("nomic-embed-text:latest", "unsupported", ["embedding"], false, "capability_missing"),
    m("gone:1b", "unavailable", [], false, "model_missing"),
  ];
  assertEquals(pickable(list).map(modelLabel), [
    "qwen3.5:2b · tools · thinking",
    "gemma3:1b · chat only",
    "deepseek-r1:1.5b · chat only · thinking",
    "gone:1b — unavailable (model_missing)",
  ]);
});
