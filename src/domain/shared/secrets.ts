import { hash } from 'node:crypto';

/**
 * SHA-256 of a credential (API key or device token): what is stored, and what a presented one is compared with in constant time.
 * One-shot `crypto.hash` skips the Hash object that createHash builds, on a path every request takes.
 */
export const sha256 = (text: string): Buffer => hash('sha256', text, 'buffer');
