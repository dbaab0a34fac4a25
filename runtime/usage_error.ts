/**
 * An operator-input mistake (a bad flag, an unusable `--ollama` URL): the CLI
 * prints its message and exits 2. Lives outside runtime/cli/ so domain modules
 * that validate operator configuration need not import the CLI layer.
 */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}
