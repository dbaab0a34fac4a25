/**
 * Cross-device refusal [TL-4]: a tmpfs, a same-filesystem bind mount and a
 * procfs mounted inside the workspace must all be refused as path_cross_device,
 * by the readers, by grep and by mutation planning.
 * The mounts live in a private mount namespace of a child process
 * (`unshare --mount --propagation private`), so the host is never touched.
 */
import { assertEquals } from "../helpers/assert.ts";

Deno.test("tools refuse tmpfs, bind and procfs mounts inside the workspace", () => {
  const dir = Deno.makeTempDirSync({ prefix: "ab-xdev-" });
  try {
    Deno.chmodSync(dir, 0o700);
    for (const d of ["tmp", "bind", "procmnt", "src"]) {
      Deno.mkdirSync(`${dir}/${d}`, { mode: 0o700 });
    }
    Deno.writeTextFileSync(`${dir}/src/x.txt`, "bound\n", { mode: 0o600 });
    Deno.writeTextFileSync(`${dir}/plain.txt`, "plain\n", { mode: 0o600 });
    const probe = new URL("./fixtures/xdev_probe.ts", import.meta.url).pathname;
    const config = new URL("../../deno.json", import.meta.url).pathname;
    const script = [
      `mount -t tmpfs -o mode=0700 tmpfs "$1/tmp"`,
      `printf 'tmp\\n' > "$1/tmp/x.txt"`,
      `chmod 600 "$1/tmp/x.txt"`,
      `mount --bind "$1/src" "$1/bind"`,
      `mount -t proc proc "$1/procmnt"`,
      `exec "$2" run --config "$3" -A "$4" "$1"`,
    ].join(" && ");
    const r = new Deno.Command("unshare", {
      args: [
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        script,
        "sh",
        dir,
        Deno.execPath(),
        config,
        probe,
      ],
      stdout: "piped",
      stderr: "piped",
    }).outputSync();
    const err = new TextDecoder().decode(r.stderr);
    assertEquals(r.code, 0, err);
    const out = JSON.parse(new TextDecoder().decode(r.stdout));
    assertEquals(out, {
      tmpfs: "path_cross_device",
      tmpfsDir: "path_cross_device",
      bind: "path_cross_device",
      proc: "path_cross_device",
      plain: "ok",
      grepTmpfs: "path_cross_device",
      writeTmpfs: "path_cross_device",
      glob: { files: ["src/x.txt"], refused: 3 },
    });
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
