/**
 * A message with everything shaped like a key or token of this service (`enk_<kind>_...`) cut down to its kind, so that
 * a secret typed in the wrong place (e.g. as --url) never reaches the terminal, a log or a CI transcript.
 */
export function redactSecrets(text: string): string {
  return text.replace(/enk_([a-z]{2,8})_[a-z0-9]+/gi, 'enk_$1_...');
}
