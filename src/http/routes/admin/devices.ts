import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { requireReach } from '../../../domain/access/admin-scope.js';
import { listOrgDevices } from '../../../domain/devices/receipts.js';
import { devicePage } from '../../../domain/devices/receipt-schema.js';
import { createDevices, MAX_DEVICES_PER_REQUEST, revokeDevice, rotateDeviceToken } from '../../../domain/devices/service.js';
import type { DeviceRecord } from '../../../domain/devices/schema.js';
import { placeOfOrg } from '../../../domain/tenancy/places.js';
import { callerOf } from '../../../edge/auth.js';
import { idempotencyHeaders, writeOptionsOf } from '../../../edge/idempotency.js';
import { pageQuery } from '../params.js';
import { adminErrors, idParam } from './params.js';
import { deviceRecord, presentDevice } from '../../../domain/presenters/admin-records.js';
import { storedAnswer } from './present.js';

const devicesBody = z.union([
  z.strictObject({ name: z.string().min(1).max(128) }),
  z.strictObject({
    devices: z
      .array(z.strictObject({ name: z.string().min(1).max(128) }))
      .min(1)
      .max(MAX_DEVICES_PER_REQUEST),
  }),
]);

const devicePath = z.object({ device_id: idParam });

const withToken = (v: { token: string; record: DeviceRecord }) => ({ ...presentDevice(v.record), token: v.token });

const deviceItems = (v: { token: string; record: DeviceRecord }[]) => ({ items: v.map(withToken) });

/** Base-station devices: register, list, revoke and rotate their tokens. */
export const deviceAdminRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    r.post('/orgs/:org_id/devices', {
      config: storedAnswer(201, (v: { token: string; record: DeviceRecord }[], body) =>
        body && typeof body === 'object' && 'devices' in body ? deviceItems(v) : withToken(v[0]!),
      ),
      schema: {
        operationId: 'createDevices',
        tags: ['devices'],
        summary: `Register one base station ({name}: answers the device) or a fleet ({devices:[{name},...]}, at most ${MAX_DEVICES_PER_REQUEST}, one transaction: answers {items}); tokens are shown in this answer only.`,
        headers: idempotencyHeaders,
        params: z.object({ org_id: idParam }),
        body: devicesBody,
        response: { 201: z.union([deviceRecord, z.object({ items: z.array(deviceRecord) })]), ...adminErrors({ 404: 'not_found: no such organization.' }) },
      },
      handler: async (req, reply) => {
        const names = 'devices' in req.body ? req.body.devices.map((d) => d.name) : [req.body.name];
        const created = await createDevices(ctx, callerOf(req), req.params.org_id, names, writeOptionsOf(req));
        return reply.code(201).send('devices' in req.body ? deviceItems(created) : withToken(created[0]!));
      },
    });
    r.get('/orgs/:org_id/devices', {
      schema: {
        operationId: 'listDevices',
        tags: ['devices'],
        summary: "An organization's base stations by name, with presence and acknowledged offset.",
        params: z.object({ org_id: idParam }),
        querystring: pageQuery,
        response: { 200: devicePage, ...adminErrors({ 404: 'not_found: no such organization.' }) },
      },
      handler: async (req) => {
        // The admin gate first, as on every admin route: 404 for no such org and for one outside the key's subject alike.
        requireReach(callerOf(req), await placeOfOrg(ctx.db.db, req.params.org_id));
        return listOrgDevices(ctx, callerOf(req), req.params.org_id, req.query);
      },
    });
    r.post('/devices/:device_id/revoke', {
      config: storedAnswer(200, presentDevice),
      schema: {
        operationId: 'revokeDevice',
        tags: ['devices'],
        summary: 'Revoke a device: its token stops working at once and its open socket is closed within seconds.',
        headers: idempotencyHeaders,
        params: devicePath,
        response: { 200: deviceRecord, ...adminErrors({ 404: 'not_found' }) },
      },
      handler: async (req) => presentDevice(await revokeDevice(ctx, callerOf(req), req.params.device_id, writeOptionsOf(req))),
    });
    r.post('/devices/:device_id/rotate-token', {
      config: storedAnswer(200, withToken),
      schema: {
        operationId: 'rotateDeviceToken',
        tags: ['devices'],
        summary: 'A new device token; the old one stops authenticating at once. `token` is shown in this answer only.',
        headers: idempotencyHeaders,
        params: devicePath,
        response: { 200: deviceRecord, ...adminErrors({ 404: 'not_found', 409: 'conflict: the device is revoked.' }) },
      },
      handler: async (req) => withToken(await rotateDeviceToken(ctx, callerOf(req), req.params.device_id, writeOptionsOf(req))),
    });
  };
