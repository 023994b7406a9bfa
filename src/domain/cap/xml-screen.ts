import type { FieldIssue } from '../../errors.js';

/** Deepest element nesting an ingested document may have; a CAP alert needs five levels. */
export const MAX_XML_DEPTH = 32;

const LT = 0x3c;
const GT = 0x3e;
const SLASH = 0x2f;
const BANG = 0x21;
const QUESTION = 0x3f;
const DOUBLE_QUOTE = 0x22;
const SINGLE_QUOTE = 0x27;

/**
 * Refuses, before any parser sees the text, what the service never parses: a document type or entity declaration (`<!DOCTYPE`,
 * `<!ENTITY`, any `<!` that opens neither a comment nor a CDATA section) and elements nested deeper than MAX_XML_DEPTH. One
 * pass from `<` to `<`, no recursion, linear in the length. It does not judge well-formedness: what it lets through that is not
 * XML, the parser refuses.
 */
export function screenXml(text: string): FieldIssue | null {
  let depth = 0;
  let at = 0;
  for (;;) {
    const open = text.indexOf('<', at);
    if (open < 0) return null;
    const next = text.charCodeAt(open + 1);
    if (next === BANG) {
      if (text.startsWith('<!--', open)) at = endOf(text, '-->', open + 4);
      else if (text.startsWith('<![CDATA[', open)) at = endOf(text, ']]>', open + 9);
      else {
        return {
          loc: ['body'],
          msg: 'Document type and entity declarations (<!DOCTYPE, <!ENTITY) are not accepted: send the CAP alert without a DTD.',
          type: 'xml_doctype_forbidden',
        };
      }
    } else if (next === QUESTION) {
      at = endOf(text, '?>', open + 2);
    } else if (next === SLASH) {
      depth--;
      at = open + 2;
    } else {
      const close = endOfTag(text, open + 1);
      if (close < 0) return null;
      const ended = text.charCodeAt(close) === GT;
      if (!(ended && text.charCodeAt(close - 1) === SLASH) && ++depth > MAX_XML_DEPTH) {
        return { loc: ['body'], msg: `Elements must not nest deeper than ${MAX_XML_DEPTH} levels.`, type: 'too_deep' };
      }
      // A tag cut short by another `<` is not XML; the scan goes on from there, so nothing after it escapes the screen.
      at = ended ? close + 1 : close;
    }
    if (at < 0) return null;
  }
}

/** Just past the first `terminator` at or after `from`; -1 when there is none (the parser then reports the document). */
function endOf(text: string, terminator: string, from: number): number {
  const found = text.indexOf(terminator, from);
  return found < 0 ? -1 : found + terminator.length;
}

/**
 * Where the start tag beginning at `from` ends: its `>` outside quoted attribute values, or the next `<` (never allowed inside a
 * tag, quoted or not); -1 when the text ends first.
 */
function endOfTag(text: string, from: number): number {
  let quote = 0;
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === LT) return i;
    if (quote !== 0) {
      if (c === quote) quote = 0;
    } else if (c === DOUBLE_QUOTE || c === SINGLE_QUOTE) {
      quote = c;
    } else if (c === GT) {
      return i;
    }
  }
  return -1;
}
