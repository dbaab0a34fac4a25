/**
 * Prints the sandbox module cache a server would choose (sandboxDenoDir), for
 * tests that run it under the launcher's exact permission flags.
 */
import { sandboxDenoDir } from "../../runtime/worker/supervisor.ts";

console.log(JSON.stringify(sandboxDenoDir()));
