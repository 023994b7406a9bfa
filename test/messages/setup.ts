import { client } from '../helpers/http.js';
import { createOrgTree, mintKey, startTestServer, type TestServer } from '../helpers/server.js';

/** The parts of a running server the message tests use. */
export type ServerUnderTest = Pick<TestServer, 'ctx' | 'base' | 'close'>;

export interface MessagesFixture {
  server: ServerUnderTest;
  orgId: string;
  api: ReturnType<typeof client>;
  /** Declares a fresh emergency and returns the path of its messages endpoint. */
  newEmergency(): Promise<{ emergencyId: string; path: string }>;
  /** Row counts of the message tables for one emergency (or all). */
  counts(emergencyId?: string): Promise<{ messages: number; attachments: number; conversations: number; audits: number }>;
}

export async function messagesFixture(env: Record<string, string> = {}, server?: ServerUnderTest): Promise<MessagesFixture> {
  const srv = server ?? (await startTestServer(env));
  const org = await createOrgTree(srv.ctx);
  const { key } = await mintKey(srv.ctx, { subjectType: 'org', subjectId: org.orgId });
  const api = client(srv.base, key);
  return {
    server: srv,
    orgId: org.orgId,
    api,
    async newEmergency() {
      const res = await api.post(`/orgs/${org.orgId}/emergencies`, { description: 'messages test' });
      if (res.status !== 201) throw new Error(`declare failed: ${res.status}`);
      const emergencyId = res.body.emergencyId as string;
      return { emergencyId, path: `/orgs/${org.orgId}/emergencies/${emergencyId}/messages` };
    },
    async counts(emergencyId?: string) {
      const db = srv.ctx.db.db;
      const count = async (table: 'messages' | 'conversations') => {
        let q = db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('org_id', '=', org.orgId);
        if (emergencyId) q = q.where('emergency_id', '=', emergencyId);
        return Number((await q.executeTakeFirstOrThrow()).n);
      };
      let aq = db
        .selectFrom('attachments')
        .innerJoin('messages', 'messages.id', 'attachments.message_id')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('attachments.org_id', '=', org.orgId);
      if (emergencyId) aq = aq.where('messages.emergency_id', '=', emergencyId);
      const audits = await db
        .selectFrom('audit_logs')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('org_id', '=', org.orgId)
        .where('event_type', '=', 'message.posted')
        .executeTakeFirstOrThrow();
      return {
        messages: await count('messages'),
        conversations: await count('conversations'),
        attachments: Number((await aq.executeTakeFirstOrThrow()).n),
        audits: Number(audits.n),
      };
    },
  };
}
