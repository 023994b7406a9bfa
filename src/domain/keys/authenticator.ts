import type { AppContext } from '../../context.js';
import type { Principal } from '../access/principal.js';
import { adminKeyKind } from '../admin-keys/service.js';
import { apiKeyKind } from './service.js';
import { CachedKeyVerifier, type CredentialVerifier } from './verifier.js';

/** Every bearer key a request may carry: API keys (`enk_live_`) and admin keys (`enk_adm_`), and what a surface adds. */
export class KeyAuthenticator {
  private readonly kinds: CredentialVerifier[];

  /** `more`: credentials a surface takes besides the keys (the tool server's OAuth access tokens). */
  constructor(ctx: AppContext, more: CredentialVerifier[] = []) {
    this.kinds = [new CachedKeyVerifier(apiKeyKind(ctx)), new CachedKeyVerifier(adminKeyKind(ctx)), ...more];
  }

  private kindOf(plaintext: string | undefined): CredentialVerifier | undefined {
    return plaintext ? this.kinds.find((k) => k.matches(plaintext)) : undefined;
  }

  async authenticate(plaintext: string | undefined): Promise<Principal | null> {
    const kind = this.kindOf(plaintext);
    return kind ? kind.authenticate(plaintext!) : null;
  }

  /** The verdict on the key as stored now, read past the cache (see CachedKeyVerifier.authenticateFresh). */
  async authenticateFresh(plaintext: string | undefined): Promise<Principal | null> {
    const kind = this.kindOf(plaintext);
    return kind ? kind.authenticateFresh(plaintext!) : null;
  }

  /** The verdict without waiting when the key is cached (the hot path); undefined when it must be read first. */
  authenticateCached(plaintext: string | undefined): Principal | null | undefined {
    const kind = this.kindOf(plaintext);
    return kind ? kind.authenticateCached(plaintext!) : null;
  }

  /** The public id part of a key (the lookup index); undefined for anything that is not a key. */
  idOf(plaintext: string | undefined): string | undefined {
    return this.kindOf(plaintext)?.idOf(plaintext!);
  }

  /** Whether the id part of this key names a key read before: its lookup is never throttled. */
  knowsKeyIdOf(plaintext: string | undefined): boolean {
    return this.kindOf(plaintext)?.knowsKeyIdOf(plaintext!) ?? false;
  }
}
