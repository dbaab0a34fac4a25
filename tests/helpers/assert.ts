/** Minimal assertions (no @std available): exact equality with readable diffs. */
export class AssertionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AssertionError";
  }
}

export function assert(cond: unknown, msg = "assertion failed"): asserts cond {
  if (!cond) throw new AssertionError(msg);
}

function canon(v: unknown): string {
  return JSON.stringify(v, (_k, x) => {
    if (typeof x === "bigint") return `${x}n`;
    if (x instanceof Uint8Array) return `bytes(${Array.from(x).join(",")})`;
    if (x instanceof Set) return { set: [...x] };
    if (x instanceof Map) return { map: [...x] };
    return x;
  });
}

export function assertEquals<T>(actual: T, expected: T, msg?: string): void {
  if (Object.is(actual, expected)) return;
  const a = canon(actual);
  const e = canon(expected);
  if (a !== e) {
    throw new AssertionError(`${msg ? msg + ": " : ""}expected ${e}\n  actual ${a}`);
  }
}

export function assertNotEquals<T>(actual: T, expected: T, msg?: string): void {
  if (canon(actual) === canon(expected)) {
    throw new AssertionError(`${msg ? msg + ": " : ""}did not expect ${canon(actual)}`);
  }
}

export function assertMatch(actual: string, re: RegExp, msg?: string): void {
  if (!re.test(actual)) {
    throw new AssertionError(`${msg ? msg + ": " : ""}${JSON.stringify(actual)} !~ ${re}`);
  }
}

/** Asserts `fn` throws; returns the error. `check` may assert on it. */
export function assertThrows(fn: () => unknown, check?: (e: unknown) => void): unknown {
  try {
    fn();
  } catch (e) {
    check?.(e);
    return e;
  }
  throw new AssertionError("expected a throw");
}

export async function assertRejects(
  fn: () => Promise<unknown>,
  check?: (e: unknown) => void,
): Promise<unknown> {
  try {
    await fn();
  } catch (e) {
    check?.(e);
    return e;
  }
  throw new AssertionError("expected a rejection");
}
