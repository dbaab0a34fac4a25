/**
 * The page's one RunStore as a hook [UI-5]: the store lives as long as the
 * workspace, every change publishes a fresh snapshot of the Run views (so
 * memos and components depend on the data, not on a counter), and the
 * terminal/lost callbacks always reach the latest handlers.
 */
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { createRunStore, type RunStore, type RunView } from "./run_store.ts";

export interface RunHandlers {
  /** A watched Run reached its terminal event. */
  onTerminal(view: RunView): void;
  /** A watched Run's stream gave up (its view is `lost`, with the reason). */
  onLost(view: RunView): void;
}

export interface RunStoreState {
  store: RunStore;
  /** Every Run view held, by run id; a new Map on every change. */
  views: ReadonlyMap<string, RunView>;
}

function snapshot(store: RunStore): ReadonlyMap<string, RunView> {
  return new Map(store.all().map((v) => [v.runId, v]));
}

export function useRunStore(handlers: RunHandlers): RunStoreState {
  const latest = useRef(handlers);
  useLayoutEffect(() => {
    latest.current = handlers;
  });
  const store = useMemo(() =>
    createRunStore((v) => latest.current.onTerminal(v), {
      onLost: (v) => latest.current.onLost(v),
    }), []);
  const [views, setViews] = useState(() => snapshot(store));
  useEffect(() => {
    const unsubscribe = store.subscribe(() => setViews(snapshot(store)));
    return () => (unsubscribe(), store.closeAll());
  }, [store]);
  return { store, views };
}
