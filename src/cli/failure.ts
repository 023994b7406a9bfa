/** A failure explained in a message, with its exit code and, for `--json`, fields added to `{"error"}`. */
export class CommandFailure extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}
