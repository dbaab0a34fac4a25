/**
 * Probe for zod_jitless_test.ts: imports the entry named on the command line (as the product
 * does, evaluating its static module graph), then the schema modules the product parses with,
 * and parses every zod schema they export once while counting `new Function` calls — zod's
 * generated parsers are the only ones any of them makes. Prints `{"built": N}`.
 */
const [entry, ...schemaModules] = Deno.args;
await import(new URL(entry, import.meta.url).href);
const modules = [];
for (const m of schemaModules) modules.push(await import(new URL(m, import.meta.url).href));
let built = 0;
globalThis.Function = new Proxy(Function, {
  construct(target, args) {
    built++;
    return Reflect.construct(target, args);
  },
});
const seen = new Set<unknown>();
const visit = (v: unknown, depth: number): void => {
  if (v === null || typeof v !== "object" || seen.has(v) || depth > 2) return;
  seen.add(v);
  const s = v as { safeParse?: (x: unknown) => unknown };
  if (typeof s.safeParse === "function") s.safeParse({});
  else for (const x of Object.values(v)) visit(x, depth + 1);
};
for (const m of modules) visit(m, 0);
console.log(JSON.stringify({ built, schemas: seen.size }));
