/** Options of every document the service builds: text that XML cannot carry (control characters) becomes U+FFFD. */
export const XML_OPTIONS = { version: '1.0', encoding: 'UTF-8', invalidCharReplacement: '\uFFFD' } as const;

/**
 * Text or an attribute value for xmlbuilder2, which writes an `&name;` or `&#n;` it finds in them as an entity reference: each
 * `&` becomes `&amp;` first, so the text always stands for itself and no input can name an entity.
 */
export function literal(text: string): string {
  return text.replace(/&/g, '&amp;');
}
