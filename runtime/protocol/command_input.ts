/**
 * The one routing rule between a message and a slash command [SC-1]: input that
 * starts with `/` is a command. Pure; shared by the Run service (which refuses
 * a command sent as a message) and the command parser.
 */

/** True when the input is meant as a slash command (the composer routes on this). */
export function isCommandInput(input: string): boolean {
  return input.startsWith("/");
}
