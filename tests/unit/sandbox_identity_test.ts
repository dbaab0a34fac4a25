/** The sandbox identity a root server switches its Worker and runner to [SB-7, EX-1]. */
import { assertEquals } from "../helpers/assert.ts";
import { parseSandboxIdentity } from "../../sandbox/identity.ts";

const PASSWD = [
  "root:x:0:0:root:/root:/bin/bash",
  "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin",
  "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin",
  "zerogid:x:500:0::/:/bin/false",
].join("\n");

Deno.test("a sandbox account name resolves to its uid and gid from /etc/passwd", () => {
  assertEquals(parseSandboxIdentity("nobody", PASSWD), { uid: 65534, gid: 65534 });
  assertEquals(parseSandboxIdentity("daemon", PASSWD), { uid: 1, gid: 1 });
});

Deno.test("numeric uid[:gid] is accepted without a passwd entry", () => {
  assertEquals(parseSandboxIdentity("4000", ""), { uid: 4000, gid: 4000 });
  assertEquals(parseSandboxIdentity("4000:4001", ""), { uid: 4000, gid: 4001 });
});

Deno.test("root, a root group, unknown names and malformed input resolve to nothing", () => {
  for (const name of ["root", "0", "0:0", "4000:0", "zerogid", "ghost", "", "a:b", "../x"]) {
    assertEquals(parseSandboxIdentity(name, PASSWD), null, name);
  }
  assertEquals(parseSandboxIdentity("4294967295", ""), null);
});
