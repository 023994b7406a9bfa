import { readFile } from 'node:fs/promises';
import type { XmlDocument, XsdValidator } from 'libxml2-wasm';
import { fieldError } from '../../errors.js';

/**
 * The official CAP 1.2 schema (OASIS, unchanged), shipped beside this file: `npm run build` copies it into dist/ next to the
 * compiled module, so the service validates with no network access, whether it runs from src/ or dist/.
 */
export const CAP_XSD_URL = new URL('./CAP-v1.2.xsd', import.meta.url);

export const CAP_NAMESPACE = 'urn:oasis:names:tc:emergency:cap:1.2';

/** Reads documents and validates them as CAP 1.2 alerts; the caller disposes each document it gets. */
export interface CapReader {
  /** A parsed document, or a 422 `xml_invalid` when the bytes are not well-formed XML. */
  parse(bytes: Uint8Array): XmlDocument;
  /** Nothing when `doc` is a valid CAP 1.2 alert; else a 422 `cap_invalid` naming the first violation. */
  validate(doc: XmlDocument): void;
}

let loading: Promise<CapReader> | undefined;

/**
 * The reader, built once per process: libxml2 (compiled to WebAssembly) is loaded and the schema compiled on first use, then
 * shared by every request.
 */
export function capReader(): Promise<CapReader> {
  loading ??= loadReader();
  return loading;
}

async function loadReader(): Promise<CapReader> {
  const { ParseOption, XmlDocument, XmlParseError, XmlValidateError, XsdValidator } = await import('libxml2-wasm');
  // No entity substitution (XML_PARSE_NOENT stays off), no DTD loading or validation, no external entities, no network, no
  // catalog: the parser reads the bytes it is given and nothing else. Documents with a DTD are refused before parsing anyway,
  // and this build of libxml2 has no file or network access registered.
  const option = ParseOption.XML_PARSE_NONET | ParseOption.XML_PARSE_NO_XXE | ParseOption.XML_PARSE_NO_SYS_CATALOG;
  // The schema document lives as long as the validator compiled from it: both are kept for the life of the process.
  const schemaDoc = XmlDocument.fromBuffer(await readFile(CAP_XSD_URL), { option });
  const validator: XsdValidator = XsdValidator.fromDoc(schemaDoc);
  return {
    parse(bytes) {
      try {
        // The body was checked to be UTF-8: an encoding named in the XML declaration is not consulted.
        return XmlDocument.fromBuffer(bytes, { option, encoding: 'utf-8' });
      } catch (err) {
        if (err instanceof XmlParseError) throw fieldError(['body'], `Not well-formed XML: ${firstProblem(err)}`, 'xml_invalid');
        throw err;
      }
    },
    validate(doc) {
      try {
        validator.validate(doc);
      } catch (err) {
        if (err instanceof XmlValidateError) throw fieldError(['body'], `Not a valid CAP 1.2 alert: ${firstProblem(err)}`, 'cap_invalid');
        throw err;
      }
    },
  };
}

/** The first diagnostic of a libxml2 failure, on one line, with its line number. */
function firstProblem(err: { message: string; details?: { message: string; line?: number }[] }): string {
  const first = err.details?.[0];
  const text = (first?.message ?? err.message).replace(/\s+/g, ' ').trim();
  return first?.line ? `${text} (line ${first.line})` : text;
}
