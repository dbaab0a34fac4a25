/**
 * `agent-builder backup NAME [--home DIR] [--gzip]` [OP-1]: writes a
 * consistent snapshot of data/ to backups/NAME.tar(.gz). Safe while the
 * server runs.
 *
 * Exit codes (fixed): 0 written; 2 usage; 4 invalid or existing name;
 * 5 the data exceeds the backup bounds; 1 any other failure (nothing is left
 * behind under backups/).
 */
import { createBackup } from "../backup/backup.ts";
import { createProgressLine, formatBytes, terminalWriter } from "../backup/progress.ts";
import { AppError, errorInfo } from "../errors.ts";
import { resolveHome } from "../home.ts";
import { BACKUP_NAME_MAX_CHARS } from "../limits.ts";
import { parseArgs, UsageError } from "../argv.ts";

/** Errors of the file system (disk full, EIO …), as opposed to bugs, which propagate. */
function isIoError(err: unknown): err is Error {
  return Object.values(Deno.errors).some((C) => err instanceof C);
}

export const BACKUP_EXIT = {
  ok: 0,
  failed: 1,
  usage: 2,
  name: 4,
  tooLarge: 5,
} as const;

const SKIPPED_SHOWN = 10;

export async function backupCommand(argv: string[]): Promise<number> {
  const a = parseArgs(argv, { flags: ["home"], switches: ["gzip"], positional: 1 });
  const name = a.positional[0];
  if (name === undefined) throw new UsageError("needs a backup NAME");
  const home = resolveHome(a.flags.home ?? Deno.cwd());
  const write = terminalWriter();
  const progress = write ? createProgressLine({ write }) : null;
  try {
    const r = await createBackup({
      root: home.root,
      name,
      gzip: a.switches.has("gzip"),
      onProgress: (p) =>
        progress?.update(p.bytes, `backup: ${formatBytes(p.bytes)}, ${p.files} files`),
    });
    progress?.done();
    console.log(
      `Backup written: ${r.relative} (${r.files} files, ${r.dirs} directories, ` +
        `${r.databases.length} databases, ${formatBytes(r.dataBytes)} of data, ` +
        `${formatBytes(r.archiveBytes)} archive).`,
    );
    if (r.skipped.length > 0) {
      console.log(
        `Skipped ${r.skipped.length} ${r.skipped.length === 1 ? "entry" : "entries"} ` +
          `a backup cannot hold ` +
          `(symbolic links, special files, or names that are not valid UTF-8 paths):`,
      );
      // SECURITY: names come from Agent workspaces; JSON escaping keeps control bytes inert.
      for (const p of r.skipped.slice(0, SKIPPED_SHOWN)) {
        console.log(`  ${p === null ? "(a name that is not valid UTF-8)" : JSON.stringify(p)}`);
      }
      if (r.skipped.length > SKIPPED_SHOWN) {
        console.log(`  … and ${r.skipped.length - SKIPPED_SHOWN} more`);
      }
    }
    return BACKUP_EXIT.ok;
  } catch (err) {
    progress?.done();
    const say = (text: string) => console.error(`agent-builder backup: ${text}`);
    if (!(err instanceof AppError)) {
      if (!isIoError(err)) throw err;
      // I/O failures (disk full, EIO …): the temporary archive was removed.
      say(`failed (${err.name}). Nothing was written.`);
      return BACKUP_EXIT.failed;
    }
    switch (err.code) {
      case "backup_name_invalid":
        say(
          `invalid backup name. Use 1-${BACKUP_NAME_MAX_CHARS} characters from ` +
            `A-Z a-z 0-9 . _ - without a leading dot or a .tar/.gz ending.`,
        );
        return BACKUP_EXIT.name;
      case "backup_exists":
        say("a backup with this name already exists in backups/; choose another name.");
        return BACKUP_EXIT.name;
      case "backup_too_large":
        say(`${errorInfo(err.code).message} Nothing was written.`);
        return BACKUP_EXIT.tooLarge;
      case "file_changed":
        say("a file changed while it was being read; nothing was written. Try again.");
        return BACKUP_EXIT.failed;
      default:
        say(`${errorInfo(err.code).message} Nothing was written.`);
        return BACKUP_EXIT.failed;
    }
  }
}
