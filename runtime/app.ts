/**
 * The Control Plane's composition root: opens the home, its databases and
 * services, and assembles the route table. Everything here is passed down
 * explicitly (no module singletons) so tests can build an App on a temp home.
 */
import { REGISTRY_MIGRATIONS } from "../migrations/registry/index.ts";
import { ensureHomeSkeleton, type HomeLayout } from "./home.ts";
import type { Logger } from "./log.ts";
import { authRoutes } from "./http/auth_routes.ts";
import { createGateway, type WebGateway } from "./http/gateway.ts";
import type { Route } from "./http/router.ts";
import { staticRoutes } from "./http/static_routes.ts";
import { type DatabaseSync, openDatabase } from "./store/sqlite.ts";

export interface AppOptions {
  home: HomeLayout;
  log: Logger;
  /** Ollama base URL from the operator (--ollama). */
  ollamaUrl: string;
}

export interface App {
  home: HomeLayout;
  log: Logger;
  registryDb: DatabaseSync;
  gateway: WebGateway;
  routes: Route[];
  /** Stops background work and closes databases. */
  close(): Promise<void>;
}

export function createApp(opts: AppOptions): App {
  ensureHomeSkeleton(opts.home);
  const registryDb = openDatabase({
    root: opts.home.root,
    relative: "data/agent-registry.sqlite",
    migrations: REGISTRY_MIGRATIONS,
  });
  const gateway = createGateway({ root: opts.home.root, log: opts.log });
  const routes: Route[] = [
    ...staticRoutes({ model: () => ({ available: false, reason: "not_configured" }) }),
    ...authRoutes(gateway),
  ];
  return {
    home: opts.home,
    log: opts.log,
    registryDb,
    gateway,
    routes,
    close() {
      registryDb.close();
      return Promise.resolve();
    },
  };
}
