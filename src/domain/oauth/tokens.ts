import { randomBytes } from 'node:crypto';
import { sha256 } from '../shared/secrets.js';

/** What the authorization server hands out: codes (one use, a minute), access tokens (the tool server) and refresh tokens. */
export type TokenKind = 'code' | 'access' | 'refresh';

const TAGS: Record<TokenKind, string> = { code: 'enk_oac_', access: 'enk_oat_', refresh: 'enk_ort_' };

/** Each token: its tag, a public id part (group 1, the lookup index) and a secret part; only a SHA-256 of the whole is stored. */
export const TOKEN_PATTERNS: Record<TokenKind, RegExp> = {
  code: /^enk_oac_([0-9a-f]{16})[0-9a-f]{64}$/,
  access: /^enk_oat_([0-9a-f]{16})[0-9a-f]{64}$/,
  refresh: /^enk_ort_([0-9a-f]{16})[0-9a-f]{64}$/,
};

export interface MintedToken {
  plaintext: string;
  prefix: string;
  secretHash: string;
}

export function mintToken(kind: TokenKind): MintedToken {
  const prefix = randomBytes(8).toString('hex');
  const plaintext = `${TAGS[kind]}${prefix}${randomBytes(32).toString('hex')}`;
  return { plaintext, prefix, secretHash: sha256(plaintext).toString('hex') };
}

/** The public id part of a token of this kind; undefined when the text is no such token. */
export const tokenPrefix = (kind: TokenKind, text: string): string | undefined => TOKEN_PATTERNS[kind].exec(text)?.[1];

/** Which kind of token the text is, if any. */
export function kindOfToken(text: string): TokenKind | undefined {
  return (Object.keys(TOKEN_PATTERNS) as TokenKind[]).find((kind) => TOKEN_PATTERNS[kind].test(text));
}
