/**
 * Skill archive verification [LC-3] (runtime/skills/archive.ts): every
 * archive is built here, every refusal is its fixed code, and every bound is
 * hit at the limit and one past it.
 */
import { assert, assertEquals, assertRejects } from "../helpers/assert.ts";
import { AppError } from "../../runtime/errors.ts";
import { verifySkillArchive } from "../../runtime/skills/archive.ts";
import {
  SKILL_ARCHIVE_MAX_BYTES,
  SKILL_ARGS_MAX_BYTES,
  SKILL_EXPANDED_MAX_BYTES,
  SKILL_MANIFEST_MAX_BYTES,
} from "../../runtime/limits.ts";
import {
  gz,
  manifestOf,
  type Member,
  sha256Hex,
  skillArchive,
  tarOf,
} from "../helpers/skill_archive.ts";
import { alwaysAsk, resolveToolSet, validateToolArgs } from "../../runtime/tools/policy.ts";
import { sealCatalog } from "../../runtime/tools/catalog.ts";
import { skillSpec } from "../../runtime/skills/manifest.ts";
import { toolIdFromProviderName } from "../../runtime/tools/catalog.ts";

const SCRIPT = 'console.log("hi");\n';

async function verify(bytes: Uint8Array, digest?: string | null) {
  return await verifySkillArchive(bytes, digest === undefined ? await sha256Hex(bytes) : digest);
}

async function refused(bytes: Uint8Array, code: string, digest?: string | null): Promise<void> {
  await assertRejects(() => verify(bytes, digest), (e) => {
    assert(e instanceof AppError, String(e));
    assertEquals(e.code, code);
  });
}

Deno.test("a well-formed archive yields the manifest, the script, the digest and an ask ToolSpec", async () => {
  const bytes = skillArchive({
    name: "word-count",
    description: "Counts words.",
    args: {
      type: "object",
      properties: { text: { type: "string", maxLength: 1000 }, top: { type: "integer" } },
      required: ["text"],
    },
  }, SCRIPT);
  const v = await verify(bytes);
  assertEquals(v.manifest.name, "word-count");
  assertEquals(new TextDecoder().decode(v.script), SCRIPT);
  assertEquals(v.digest, await sha256Hex(bytes));
  assertEquals(v.spec.id, "skill/word-count");
  assertEquals(v.spec.default_policy, "ask");
  assertEquals(Object.keys(v.spec.args).sort(), ["text", "top"]);
  assertEquals(v.spec.args.text.type === "string" && v.spec.args.text.required, true);
});

Deno.test("the digest is checked before anything is decompressed: missing, malformed and wrong are refused", async () => {
  const bytes = skillArchive({ name: "abc" }, SCRIPT);
  await refused(bytes, "skill_digest_missing", null);
  await refused(bytes, "skill_digest_missing", "xyz");
  await refused(bytes, "skill_digest_mismatch", "0".repeat(64));
  // Upper-case hex of the right digest is the same pin.
  assertEquals((await verify(bytes, (await sha256Hex(bytes)).toUpperCase())).manifest.name, "abc");
  // A corrupt gzip stream with a matching pin is still refused (the pin is of these bytes).
  const broken = bytes.slice(0, bytes.length - 12);
  await refused(broken, "skill_archive_invalid");
  await refused(new TextEncoder().encode("not gzip at all"), "skill_archive_invalid");
});

Deno.test("the archive is accepted at exactly 12 KiB and refused one byte past", async () => {
  // Stored (level 0) gzip: tar + 23 bytes of framing; the gzip file name pads to the exact size.
  const tarFor = (scriptBytes: number) =>
    tarOf([
      { path: "skill.json", data: manifestOf({ name: "big" }) },
      { path: "main.ts", data: "//" + "x".repeat(scriptBytes - 3) + "\n" },
    ]);
  const tar = tarFor(8000);
  const base = gz(tar, { level: 0 }).length;
  const at = gz(tar, { level: 0, filename: "f".repeat(SKILL_ARCHIVE_MAX_BYTES - base - 1) });
  assertEquals(at.length, SKILL_ARCHIVE_MAX_BYTES);
  assertEquals((await verify(at)).manifest.name, "big");
  const past = gz(tar, { level: 0, filename: "f".repeat(SKILL_ARCHIVE_MAX_BYTES - base) });
  assertEquals(past.length, SKILL_ARCHIVE_MAX_BYTES + 1);
  await refused(past, "skill_archive_too_large");
});

Deno.test("members hold at most 16 KiB together: at the limit accepted, one byte past refused", async () => {
  const man = manifestOf({ name: "full" });
  const manBytes = new TextEncoder().encode(man).length;
  const script = (n: number) => "//" + "y".repeat(n - 3) + "\n";
  const at = gz(tarOf([
    { path: "skill.json", data: man },
    { path: "main.ts", data: script(SKILL_EXPANDED_MAX_BYTES - manBytes) },
  ]));
  assertEquals((await verify(at)).script.length, SKILL_EXPANDED_MAX_BYTES - manBytes);
  const past = gz(tarOf([
    { path: "skill.json", data: man },
    { path: "main.ts", data: script(SKILL_EXPANDED_MAX_BYTES - manBytes + 1) },
  ]));
  await refused(past, "skill_expanded_too_large");
});

Deno.test("an oversized member is refused from its header: a 16 KiB + 1 script, a 4 KiB + 1 skill.json", async () => {
  await refused(
    skillArchive({ name: "huge" }, "x".repeat(SKILL_EXPANDED_MAX_BYTES + 1)),
    "skill_member_too_large",
  );
  const man = manifestOf({ name: "fat" });
  const pad = " ".repeat(SKILL_MANIFEST_MAX_BYTES - man.length);
  assertEquals(
    (await verify(gz(tarOf([
      { path: "skill.json", data: man + pad },
      { path: "main.ts", data: SCRIPT },
    ])))).manifest.name,
    "fat",
  );
  await refused(
    gz(tarOf([{ path: "skill.json", data: man + pad + " " }, { path: "main.ts", data: SCRIPT }])),
    "skill_member_too_large",
  );
});

Deno.test("a decompression bomb stops at the expanded-stream cap", async () => {
  // A valid archive followed by 4 MiB of zeros: tiny compressed, huge expanded.
  const bomb = gz(tarOf([
    { path: "skill.json", data: manifestOf({ name: "bomb" }) },
    { path: "main.ts", data: SCRIPT },
  ], { trailer: 4 * 1024 * 1024 }));
  assert(bomb.length < SKILL_ARCHIVE_MAX_BYTES);
  await refused(bomb, "skill_expanded_too_large");
});

Deno.test("exactly skill.json and its entry script: extra files, directories and nested paths are refused", async () => {
  const extra: [Member[], string][] = [
    [[{ path: "README.md", data: "hi" }], "skill_extra_file"],
    [[{ path: "lib", dir: true }], "skill_extra_file"],
    [[{ path: "lib", dir: true }, { path: "lib/x.ts", data: "1" }], "skill_extra_file"],
    [[{ path: "main.ts", data: "again" }], "skill_extra_file"],
  ];
  for (const [members, code] of extra) {
    await refused(skillArchive({ name: "extra" }, SCRIPT, members), code);
  }
  // `tar -C dir .` writes `./` and `./name`: tolerated.
  const dotted = gz(tarOf([
    { path: ".", dir: true },
    { path: "./skill.json", data: manifestOf({ name: "dotted" }) },
    { path: "./main.ts", data: SCRIPT },
  ]));
  assertEquals((await verify(dotted)).manifest.name, "dotted");
  // The entry the manifest names must be the other member.
  await refused(
    gz(tarOf([{ path: "skill.json", data: manifestOf({ name: "x1" }) }, {
      path: "other.ts",
      data: SCRIPT,
    }])),
    "skill_manifest_invalid",
  );
});

Deno.test("links, fifos and devices are refused whatever they point at", async () => {
  for (const link of ["symlink", "hardlink", "fifo", "chardev"] as const) {
    await refused(
      skillArchive({ name: "links" }, SCRIPT, [{ path: "evil", link }]),
      "skill_link_refused",
    );
  }
  // The entry script itself as a symlink.
  await refused(
    gz(tarOf([{ path: "skill.json", data: manifestOf({ name: "links" }) }, {
      path: "main.ts",
      link: "symlink",
      target: "/etc/shadow",
    }])),
    "skill_link_refused",
  );
});

Deno.test("only strict POSIX ustar: GNU magic is refused as invalid", async () => {
  const gnu = gz(tarOf([
    { path: "skill.json", data: manifestOf({ name: "gnu" }) },
    { path: "main.ts", data: SCRIPT },
  ], { gnuMagic: true }));
  await refused(gnu, "skill_archive_invalid");
});

Deno.test("manifests: name, entry, keys and the args subset each refused with a fixed code", async () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ name: "A" }, "skill_manifest_invalid"],
    [{ name: "a" }, "skill_manifest_invalid"],
    [{ name: "has_underscore" }, "skill_manifest_invalid"],
    [{ name: "x".repeat(33) }, "skill_manifest_invalid"],
    [{ name: "ok-name", extra: 1 }, "skill_manifest_invalid"],
    [{ name: "ok-name", entry: "../main.ts" }, "skill_manifest_invalid"],
    [{ name: "ok-name", entry: "main.sh" }, "skill_manifest_invalid"],
    [{ name: "ok-name", entry: "skill.json" }, "skill_manifest_invalid"],
    [{ name: "ok-name", description: "" }, "skill_manifest_invalid"],
    [
      { name: "ok-name", args: { type: "object", properties: { o: { type: "object" } } } },
      "skill_args_unsupported",
    ],
    [
      { name: "ok-name", args: { type: "object", properties: { n: { type: "number" } } } },
      "skill_args_unsupported",
    ],
    [{ name: "ok-name", args: { oneOf: [] } }, "skill_args_unsupported"],
    [{
      name: "ok-name",
      args: { type: "object", properties: { a: { type: "array", items: { type: "string" } } } },
    }, "skill_args_unsupported"],
  ];
  for (const [m, code] of cases) {
    const entry = typeof m.entry === "string" && !m.entry.includes("/") && m.entry !== "skill.json"
      ? m.entry
      : "main.ts";
    const bytes = gz(tarOf([
      { path: "skill.json", data: manifestOf(m as { name: string }) },
      { path: entry, data: SCRIPT },
    ]));
    await refused(bytes, code);
  }
  const notJson = gz(tarOf([{ path: "skill.json", data: "{" }, { path: "main.ts", data: SCRIPT }]));
  await refused(notJson, "skill_manifest_invalid");
  const noManifest = gz(tarOf([{ path: "main.ts", data: SCRIPT }]));
  await refused(noManifest, "skill_manifest_invalid");
  const notUtf8 = gz(tarOf([
    { path: "skill.json", data: manifestOf({ name: "bin" }) },
    { path: "main.ts", data: new Uint8Array([0xff, 0xfe, 0x00]) },
  ]));
  await refused(notUtf8, "skill_archive_invalid");
});

Deno.test("a skill is always ask: an allow rule cannot relax it, a deny rule removes it", () => {
  const spec = skillSpec({
    name: "echo",
    description: "Echo.",
    entry: "main.ts",
    args: { type: "object", properties: {} },
  });
  assert(alwaysAsk(spec.id));
  const catalog = sealCatalog([spec]);
  const allow = resolveToolSet({
    catalog,
    rules: [{ tool_id: spec.id, decision: "allow" }],
    interactive: true,
    id: "t",
  });
  assertEquals(allow.tools.map((t) => [t.spec.id, t.decision]), [["skill/echo", "ask"]]);
  const deny = resolveToolSet({
    catalog,
    rules: [{ tool_id: spec.id, decision: "deny" }],
    interactive: true,
    id: "t",
  });
  assertEquals(deny.tools.length, 0);
  assertEquals(toolIdFromProviderName("skill__echo"), "skill/echo");
  assertEquals(toolIdFromProviderName("skill__word-count2"), "skill/word-count2");
});

Deno.test("a skill's arguments are bounded by its schema and by 16 KiB in all: at the limit accepted, one byte past refused", () => {
  const spec = skillSpec({
    name: "big-args",
    description: "d",
    entry: "main.ts",
    args: {
      type: "object",
      properties: { text: { type: "string", maxLength: 4096 } },
      required: ["text"],
    },
  });
  assertEquals(spec.input_max_bytes, SKILL_ARGS_MAX_BYTES);
  const envelope = JSON.stringify({ text: "" }).length;
  const at = { text: "x".repeat(SKILL_ARGS_MAX_BYTES - envelope) };
  assertEquals(JSON.stringify(at).length, SKILL_ARGS_MAX_BYTES);
  assert(validateToolArgs(spec, at).ok);
  assert(!validateToolArgs(spec, { text: at.text + "x" }).ok);
  assert(!validateToolArgs(spec, {}).ok, "a required argument");
  assert(!validateToolArgs(spec, { text: "a", other: 1 }).ok, "an undeclared argument");
});
