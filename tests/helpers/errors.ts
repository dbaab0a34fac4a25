/** Assertion helpers for AppError codes. */
import { AppError, type ErrorCode } from "../../runtime/errors.ts";
import { AssertionError } from "./assert.ts";

export function expectCode(code: ErrorCode): (e: unknown) => void {
  return (e) => {
    if (!(e instanceof AppError)) throw new AssertionError(`expected AppError(${code}), got ${e}`);
    if (e.code !== code) throw new AssertionError(`expected ${code}, got ${e.code}`);
  };
}
