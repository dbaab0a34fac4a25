import { createFileLogger } from "../../runtime/log.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import { withTempHome } from "../helpers/home.ts";

Deno.test("the file logger batches lines and rotates with a fixed number of backups", () =>
  withTempHome((dir) => {
    const path = `${dir}/server.log`;
    const log = createFileLogger({ path, rotateBytes: 2048, backups: 3 });
    log.info("first", { n: 1 });
    assertEquals(Deno.statSync(dir).isDirectory, true);
    let exists = true;
    try {
      Deno.statSync(path);
    } catch {
      exists = false;
    }
    assertEquals(exists, false, "nothing is written before a flush");
    for (let i = 0; i < 200; i++) {
      log.info("event.name", { i, text: "x".repeat(500) });
      log.flush();
    }
    log.close();
    const names = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
    assertEquals(names, ["server.log", "server.log.1", "server.log.2", "server.log.3"]);
    for (const n of names) {
      const st = Deno.statSync(`${dir}/${n}`);
      assert(st.size <= 2048 + 400, `${n} is ${st.size} bytes`);
      assertEquals(st.mode! & 0o777, 0o600);
    }
    const line = JSON.parse(Deno.readTextFileSync(path).trim().split("\n").at(-1)!);
    assertEquals(line.event, "event.name");
    assertEquals(line.text.length, 200, "string fields are clipped");
  }));
