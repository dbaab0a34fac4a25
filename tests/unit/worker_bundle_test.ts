/**
 * The pre-bundled Worker is run only while it is fresh [PF-1]: a bundle older
 * than any source it was built from, or without a usable list of sources, is
 * never chosen (the Worker then runs main.ts, which is always current).
 */
import { assertEquals } from "../helpers/assert.ts";
import { workerBundleFresh } from "../../runtime/worker/bundle.ts";

function fixture(): { dir: string; bundle: string; list: string; a: string; b: string } {
  const dir = Deno.makeTempDirSync({ prefix: "ab-worker-bundle-" });
  const a = `${dir}/a.ts`;
  const b = `${dir}/b.ts`;
  Deno.writeTextFileSync(a, "export const a = 1;");
  Deno.writeTextFileSync(b, "export const b = 2;");
  const bundle = `${dir}/worker.js`;
  Deno.writeTextFileSync(bundle, "// bundle");
  const t = new Date(Date.now() - 60_000);
  Deno.utimeSync(a, t, t);
  Deno.utimeSync(b, t, t);
  const list = `${dir}/worker.inputs.json`;
  Deno.writeTextFileSync(list, JSON.stringify([a, b]));
  return { dir, bundle, list, a, b };
}

Deno.test("a bundle newer than every source it lists is fresh", () => {
  const f = fixture();
  try {
    assertEquals(workerBundleFresh(f.bundle, f.list), true);
  } finally {
    Deno.removeSync(f.dir, { recursive: true });
  }
});

Deno.test("one source edited after the build makes the bundle stale", () => {
  const f = fixture();
  try {
    const later = new Date(Date.now() + 60_000);
    Deno.utimeSync(f.b, later, later);
    assertEquals(workerBundleFresh(f.bundle, f.list), false);
  } finally {
    Deno.removeSync(f.dir, { recursive: true });
  }
});

Deno.test("a missing bundle, list or listed source, or a malformed list, is never fresh", () => {
  const f = fixture();
  try {
    assertEquals(workerBundleFresh(`${f.dir}/absent.js`, f.list), false);
    assertEquals(workerBundleFresh(f.bundle, `${f.dir}/absent.json`), false);
    for (const bad of ["[]", "{}", '["relative/a.ts"]', "[1]", "not json"]) {
      Deno.writeTextFileSync(f.list, bad);
      assertEquals(workerBundleFresh(f.bundle, f.list), false, bad);
    }
    Deno.writeTextFileSync(f.list, JSON.stringify([f.a, `${f.dir}/deleted.ts`]));
    assertEquals(workerBundleFresh(f.bundle, f.list), false);
  } finally {
    Deno.removeSync(f.dir, { recursive: true });
  }
});
