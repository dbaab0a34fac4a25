/**
 * The model's availability and the catalog as a hook [UI-4, #18]: `/health`
 * and `/api/models`, read on mount, on demand (the banner's "Check again")
 * and on a timer, so the banner follows the model without a reload.
 */
import { useCallback, useEffect, useState } from "preact/hooks";
import type { Api } from "./endpoints.ts";
import type { ModelProfile } from "./types.ts";

/** How often /health is read again while the model is down / available. */
export const HEALTH_POLL_DOWN_MS = 3_000;
export const HEALTH_POLL_UP_MS = 20_000;

export interface ModelState {
  models: ModelProfile[];
  health: { model: string; reason: string | null } | null;
  refresh(): void;
}

export function useModelState(api: Api, fail: (err: unknown) => void): ModelState {
  const [models, setModels] = useState<ModelProfile[]>([]);
  const [health, setHealth] = useState<{ model: string; reason: string | null } | null>(null);
  const refresh = useCallback(() => {
    api.health().then(setHealth, fail);
    api.listModels().then(setModels, () => setModels([]));
  }, [api, fail]);
  useEffect(() => refresh(), [refresh]);
  // The banner follows the model without a reload: /health is read again every few seconds
  // while the model is down (the read itself pokes the Broker to re-check), rarely while up,
  // and not while the page is hidden.
  const down = health !== null && health.model !== "available";
  useEffect(() => {
    const every = down ? HEALTH_POLL_DOWN_MS : HEALTH_POLL_UP_MS;
    const t = setInterval(() => {
      if (document.visibilityState !== "hidden") refresh();
    }, every);
    return () => clearInterval(t);
  }, [down, refresh]);
  return { models, health, refresh };
}
