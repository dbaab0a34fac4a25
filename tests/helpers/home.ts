/** Temporary private homes for tests (real directories, removed afterwards). */
export async function withTempHome<T>(fn: (dir: string) => Promise<T> | T): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "ab-home-" });
  await Deno.chmod(dir, 0o700);
  try {
    return await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Homes made by makeTempHome in this test module, removed when the module's process ends. */
const madeHomes = new Set<string>();
globalThis.addEventListener("unload", () => {
  for (const dir of madeHomes) {
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch { /* already removed by its test */ }
  }
});

/**
 * A home that outlives one callback (servers restarted on it, a backup restored
 * into it): its test may remove it; whatever is left is removed at the end of
 * the test module (a full suite run left hundreds of homes in TMPDIR).
 */
export function makeTempHome(): string {
  const dir = Deno.makeTempDirSync({ prefix: "ab-home-" });
  Deno.chmodSync(dir, 0o700);
  madeHomes.add(dir);
  return dir;
}

/** Whether anything (a link included, never followed) is at `path`: the product's own check. */
export { pathExists as exists } from "../../runtime/path_safety.ts";
