/**
 * `agent-builder restore FILE --yes [--home DIR]` [OP-1]: validates the whole
 * archive, then swaps it in for data/ and keeps the previous data in
 * .runtime/recovery/. Without --yes it validates, says what it would do, and
 * changes nothing.
 *
 * Exit codes (fixed): 0 restored, or dry run and the archive is valid;
 * 2 usage; 3 refused because a server holds the home; 5 the archive is
 * invalid (nothing changed); 1 any other failure.
 *
 * SECURITY: nothing read from the archive is printed except numbers and the
 * manifest's timestamp/release after schema validation; refusal reasons are
 * fixed sentences (archive_error.ts).
 */
import { ArchiveError, describeReason } from "../backup/archive_error.ts";
import { createProgressLine, formatBytes, terminalWriter } from "../backup/progress.ts";
import { PreviousDataMisplaced, restoreBackup, type RestoreResult } from "../backup/restore.ts";
import { AppError, errorInfo } from "../errors.ts";
import { resolveHome } from "../home.ts";
import { parseArgs, UsageError } from "../argv.ts";

/** Errors of the file system (disk full, EIO …), as opposed to bugs, which propagate. */
function isIoError(err: unknown): err is Error {
  return Object.values(Deno.errors).some((C) => err instanceof C);
}

export const RESTORE_EXIT = {
  ok: 0,
  failed: 1,
  usage: 2,
  refused: 3,
  invalid: 5,
} as const;

function summary(r: RestoreResult): string {
  const dbs = r.databases.map((d) => `${d.kind} v${d.user_version}`).join(", ");
  return `${r.files} files, ${r.dirs} directories, ${formatBytes(r.dataBytes)}; ` +
    `databases: ${dbs || "none"}; made by release ${r.release} at ${r.createdAt}`;
}

export function restoreCommand(argv: string[]): number {
  const a = parseArgs(argv, { flags: ["home"], switches: ["yes"], positional: 1 });
  const file = a.positional[0];
  if (file === undefined) throw new UsageError("needs the backup FILE to restore");
  const home = resolveHome(a.flags.home ?? Deno.cwd());
  const apply = a.switches.has("yes");
  const write = terminalWriter();
  const progress = write ? createProgressLine({ write }) : null;
  const say = (text: string) => console.error(`agent-builder restore: ${text}`);
  let r: RestoreResult;
  try {
    r = restoreBackup({
      root: home.root,
      file,
      apply,
      onProgress: (read, size) =>
        progress?.update(read, `restore: checked ${formatBytes(read)} of ${formatBytes(size)}`),
    });
    progress?.done();
  } catch (err) {
    progress?.done();
    if (err instanceof ArchiveError) {
      say(`the archive is invalid: ${describeReason(err.reason)}. Nothing was changed.`);
      return RESTORE_EXIT.invalid;
    }
    if (err instanceof PreviousDataMisplaced) {
      say(
        `data/ was restored, but finishing the restore failed; ` +
          `the previous data is kept, complete, in ${err.keptAt}.`,
      );
      return RESTORE_EXIT.failed;
    }
    if (err instanceof AppError && err.code === "restore_refused") {
      say("refused: a server is running for this home. Stop it first. Nothing was changed.");
      return RESTORE_EXIT.refused;
    }
    if (err instanceof Deno.errors.NotFound || err instanceof Deno.errors.PermissionDenied) {
      say(`cannot read ${JSON.stringify(file)}. Nothing was changed.`);
      return RESTORE_EXIT.failed;
    }
    if (err instanceof AppError) {
      say(`${errorInfo(err.code).message} Nothing was changed.`);
      return RESTORE_EXIT.failed;
    }
    if (isIoError(err)) {
      // I/O failures (disk full, EIO …) before the swap: the staging copy was removed.
      say(`failed (${err.name}). Nothing was changed.`);
      return RESTORE_EXIT.failed;
    }
    throw err;
  }
  if (!r.applied) {
    console.log(`The archive is valid: ${summary(r)}.`);
    console.log(
      r.hadData
        ? "With --yes, restore would move the current data/ to .runtime/recovery/<timestamp>/data " +
          "and install the archive's data/ in its place."
        : "With --yes, restore would install the archive's data/ (this home has no data/ yet).",
    );
    console.log("Dry run: nothing was changed. Re-run with --yes to restore.");
    return RESTORE_EXIT.ok;
  }
  console.log(`Restored data/ from the archive: ${summary(r)}.`);
  if (r.recoveryRel) {
    console.log(
      `The previous data/ is kept in ${r.recoveryRel}; delete it yourself once you no longer need it.`,
    );
  }
  return RESTORE_EXIT.ok;
}
