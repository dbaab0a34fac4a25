/**
 * The model's availability and the catalog as a hook [UI-4]: `/health` and
 * `/api/models`, read on mount and on demand (the banner's "Check again").
 */
import { useCallback, useEffect, useState } from "preact/hooks";
import type { Api } from "./endpoints.ts";
import type { ModelProfile } from "./types.ts";

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
  return { models, health, refresh };
}
