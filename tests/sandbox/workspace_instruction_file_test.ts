/** The instruction file reader [CX-2] and default provisioning [AG-4]. */
import { assert, assertEquals, assertThrows } from "../helpers/assert.ts";
import { expectCode } from "../helpers/errors.ts";
import {
  DEFAULT_INSTRUCTION_TEXT,
  ensureDefaultInstructionFile,
  readInstructionFile,
} from "../../runtime/workspace/instruction_file.ts";
import { withWorkspace } from "./workspace_fixture.ts";

const code = (r: { ok: boolean; code?: string }) => (r.ok ? "ok" : r.code);
const NAME = "agent-builder.md";

Deno.test("a missing instruction file is a no-op", () => {
  withWorkspace((ws) => {
    assertEquals(readInstructionFile(ws.dir), { ok: true, present: false });
  });
});

Deno.test("provisioning creates the default once and never overwrites", () => {
  withWorkspace((ws) => {
    assertEquals(ensureDefaultInstructionFile(ws.dir), "created");
    const st = Deno.statSync(`${ws.dir}/${NAME}`);
    assertEquals((st.mode ?? 0) & 0o777, 0o600);
    assertEquals(st.nlink, 1);
    const r = readInstructionFile(ws.dir);
    assert(r.ok && r.present);
    assertEquals(r.text, DEFAULT_INSTRUCTION_TEXT);
    Deno.writeTextFileSync(`${ws.dir}/${NAME}`, "operator text\n");
    assertEquals(ensureDefaultInstructionFile(ws.dir), "exists");
    assertEquals(Deno.readTextFileSync(`${ws.dir}/${NAME}`), "operator text\n");
    assertEquals([...Deno.readDirSync(ws.dir)].map((e) => e.name), [NAME]);
  });
});

Deno.test("provisioning never replaces a symlink or directory at the name", () => {
  withWorkspace((ws) => {
    const outside = Deno.makeTempFileSync();
    try {
      Deno.symlinkSync(outside, `${ws.dir}/${NAME}`);
      assertEquals(ensureDefaultInstructionFile(ws.dir), "exists");
      assertEquals(Deno.readTextFileSync(outside), "");
      assertEquals(code(readInstructionFile(ws.dir)), "path_symlink");
    } finally {
      Deno.removeSync(outside);
    }
  });
});

Deno.test("provisioning refuses an unsafe workspace directory", () => {
  withWorkspace((ws) => {
    Deno.chmodSync(ws.dir, 0o777);
    assertThrows(() => ensureDefaultInstructionFile(ws.dir), expectCode("unsafe_path"));
    Deno.chmodSync(ws.dir, 0o700);
  });
});

Deno.test("the reader refuses every unsafe instruction file", () => {
  withWorkspace((ws) => {
    const p = `${ws.dir}/${NAME}`;
    const reset = (data: string | Uint8Array) => {
      try {
        Deno.removeSync(p);
      } catch (err) {
        if (!(err instanceof Deno.errors.NotFound)) throw err;
      }
      ws.file(NAME, data);
    };
    reset("a".repeat(32 * 1024));
    assertEquals(code(readInstructionFile(ws.dir)), "ok");
    reset("a".repeat(32 * 1024 + 1));
    assertEquals(code(readInstructionFile(ws.dir)), "file_too_large");
    reset(new Uint8Array([0x23, 0xff]));
    assertEquals(code(readInstructionFile(ws.dir)), "file_invalid_utf8");
    reset("nul\u0000");
    assertEquals(code(readInstructionFile(ws.dir)), "file_binary");
    reset("ok\n");
    Deno.chmodSync(p, 0o660);
    assertEquals(code(readInstructionFile(ws.dir)), "path_unsafe_owner");
    reset("ok\n");
    Deno.chownSync(p, 4242, 4242);
    assertEquals(code(readInstructionFile(ws.dir)), "path_unsafe_owner");
    reset("ok\n");
    Deno.linkSync(p, `${ws.dir}/second`);
    assertEquals(code(readInstructionFile(ws.dir)), "file_hardlinked");
    Deno.removeSync(`${ws.dir}/second`);
    Deno.removeSync(p);
    new Deno.Command("mkfifo", { args: [p] }).outputSync();
    assertEquals(code(readInstructionFile(ws.dir)), "file_not_regular");
  });
});

Deno.test("the reader refuses a file replaced during the read", () => {
  withWorkspace((ws) => {
    ws.file(NAME, "first\n");
    ws.file("swap", "second\n");
    const r = readInstructionFile(ws.dir, {
      afterRead: () => Deno.renameSync(`${ws.dir}/swap`, `${ws.dir}/${NAME}`),
    });
    assertEquals(code(r), "file_changed");
  });
});
