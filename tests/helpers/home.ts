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

export function makeTempHome(): string {
  const dir = Deno.makeTempDirSync({ prefix: "ab-home-" });
  Deno.chmodSync(dir, 0o700);
  return dir;
}

/** Whether anything (a link included, never followed) is at `path`: the product's own check. */
export { pathExists as exists } from "../../runtime/path_safety.ts";
