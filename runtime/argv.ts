/**
 * Minimal, strict argv parsing for sub-commands: known `--flag value` and
 * `--switch` options only; anything else is a usage error. A base module (no
 * imports but UsageError) so the CLI, the sandbox's worker entry and tools/
 * can all parse argv without importing each other.
 */
import { UsageError } from "./usage_error.ts";

export { UsageError };

export interface ParsedArgs {
  flags: Record<string, string>;
  switches: Set<string>;
  positional: string[];
}

export function parseArgs(
  argv: readonly string[],
  spec: { flags?: readonly string[]; switches?: readonly string[]; positional?: number },
): ParsedArgs {
  const flags: Record<string, string> = Object.create(null);
  const switches = new Set<string>();
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith("--")) {
      const eq = a.indexOf("=");
      const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
      if (spec.flags?.includes(name)) {
        const value = eq > 0 ? a.slice(eq + 1) : argv[++i];
        if (value === undefined) throw new UsageError(`--${name} needs a value`);
        flags[name] = value;
      } else if (spec.switches?.includes(name) && eq < 0) {
        switches.add(name);
      } else {
        throw new UsageError(`unknown option ${a}`);
      }
    } else {
      positional.push(a);
    }
  }
  if (positional.length > (spec.positional ?? 0)) {
    throw new UsageError(`unexpected argument ${positional[spec.positional ?? 0]}`);
  }
  return { flags, switches, positional };
}
