import type { PreparedAttachment } from '../attachments/prepare.js';
import type { PostMessageInput } from './schema.js';

/**
 * A post whose body was decoded and its attachments prepared off the event loop (a large REST body): the input with its inline
 * texts dropped, and the attachments ready to store, or the rejection of the first that could not be, which postMessage
 * raises where it would have found it, after the emergency was found.
 */
export class DecodedPost {
  constructor(
    readonly input: PostMessageInput,
    private readonly prepared: PreparedAttachment[],
    private readonly rejection: Error | null,
  ) {}

  attachments(): PreparedAttachment[] {
    if (this.rejection) throw this.rejection;
    return this.prepared;
  }
}
