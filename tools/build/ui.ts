/**
 * Bundles the browser UI (ui/main.ts + ui/styles.css) with esbuild into
 * dist/app.js and dist/app.css, which the server embeds through imports.
 * `--if-stale` rebuilds only when a ui/ file is newer than the bundle.
 */
const root = new URL("../../", import.meta.url).pathname;
const esbuild = `${root}node_modules/.bin/esbuild`;

function newest(dir: string): number {
  let t = 0;
  for (const e of Deno.readDirSync(dir)) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory) t = Math.max(t, newest(p));
    else t = Math.max(t, Deno.statSync(p).mtime?.getTime() ?? 0);
  }
  return t;
}

function mtime(path: string): number {
  try {
    return Deno.statSync(path).mtime?.getTime() ?? 0;
  } catch {
    return 0;
  }
}

export async function buildUi(ifStale: boolean): Promise<boolean> {
  const built = Math.min(mtime(`${root}dist/app.js`), mtime(`${root}dist/app.css`));
  if (ifStale && built > 0 && built >= newest(`${root}ui`)) return false;
  Deno.mkdirSync(`${root}dist`, { recursive: true });
  for (
    const args of [
      [
        "ui/main.ts",
        "--bundle",
        "--format=esm",
        "--target=es2022",
        "--minify",
        "--legal-comments=none",
        "--outfile=dist/app.js",
      ],
      ["ui/styles.css", "--bundle", "--minify", "--outfile=dist/app.css"],
    ]
  ) {
    const out = await new Deno.Command(esbuild, {
      args: [...args, "--log-level=warning"],
      cwd: root,
    })
      .output();
    if (!out.success) {
      await Deno.stderr.write(out.stderr);
      throw new Error(`esbuild failed for ${args[0]}`);
    }
  }
  return true;
}

if (import.meta.main) {
  const rebuilt = await buildUi(Deno.args.includes("--if-stale"));
  if (rebuilt && !Deno.args.includes("--quiet")) {
    console.log("ui bundle built: dist/app.js, dist/app.css");
  }
}
