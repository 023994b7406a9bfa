import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { categoryCreateInput, categoryItem, categoryUpdateInput } from '../../../domain/categories/schema.js';
import { createCategory, updateCategory } from '../../../domain/categories/service.js';
import {
  createEnterprise,
  createOrg,
  createPartner,
  enterprisePage,
  enterpriseRecord,
  getOrg,
  listEnterprises,
  listOrgs,
  listPartners,
  nameInput,
  orgPage,
  orgRecord,
  partnerPage,
  partnerRecord,
} from '../../../domain/orgs/service.js';
import { userCreateInput, userItem, userUpdateInput } from '../../../domain/users/schema.js';
import { createUser, updateUser } from '../../../domain/users/service.js';
import { callerOf } from '../../../edge/auth.js';
import { idempotencyHeaders } from '../../../edge/idempotency.js';
import { adminErrors, idParam } from './params.js';
import { pageQuery } from '../params.js';
import { storedAnswer } from './present.js';

const same = <T>(v: T) => v;

/** Partners, enterprises, organizations, categories and users. */
export const tenancyAdminRoutes =
  (ctx: AppContext): FastifyPluginAsync =>
  async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const partnerPath = z.object({ partner_id: idParam });
    const enterprisePath = z.object({ enterprise_id: idParam });
    const orgPath = z.object({ org_id: idParam });

    r.post('/partners', {
      config: storedAnswer(201, same),
      schema: {
        operationId: 'createPartner',
        tags: ['tenancy'],
        summary: 'Create a partner (instance admin keys only).',
        headers: idempotencyHeaders,
        body: nameInput,
        response: { 201: partnerRecord, ...adminErrors() },
      },
      handler: async (req, reply) => reply.code(201).send(await createPartner(ctx, callerOf(req), req.body)),
    });
    r.get('/partners', {
      schema: {
        operationId: 'listPartners',
        tags: ['tenancy'],
        summary: 'The partners this admin key reaches, by name.',
        querystring: pageQuery,
        response: { 200: partnerPage, ...adminErrors() },
      },
      handler: (req) => listPartners(ctx, callerOf(req), req.query),
    });

    r.post('/partners/:partner_id/enterprises', {
      config: storedAnswer(201, same),
      schema: {
        operationId: 'createEnterprise',
        tags: ['tenancy'],
        summary: 'Create an enterprise of a partner.',
        headers: idempotencyHeaders,
        params: partnerPath,
        body: nameInput,
        response: { 201: enterpriseRecord, ...adminErrors({ 404: 'not_found: no such partner.' }) },
      },
      handler: async (req, reply) => reply.code(201).send(await createEnterprise(ctx, callerOf(req), req.params.partner_id, req.body)),
    });
    r.get('/partners/:partner_id/enterprises', {
      schema: {
        operationId: 'listEnterprises',
        tags: ['tenancy'],
        summary: "A partner's enterprises, by name (an enterprise admin key sees its own).",
        params: partnerPath,
        querystring: pageQuery,
        response: { 200: enterprisePage, ...adminErrors({ 404: 'not_found: no such partner.' }) },
      },
      handler: (req) => listEnterprises(ctx, callerOf(req), req.params.partner_id, req.query),
    });

    r.post('/enterprises/:enterprise_id/orgs', {
      config: storedAnswer(201, same),
      schema: {
        operationId: 'createOrganization',
        tags: ['tenancy'],
        summary: 'Create an organization of an enterprise, with its Uncategorized category.',
        headers: idempotencyHeaders,
        params: enterprisePath,
        body: nameInput,
        response: { 201: orgRecord, ...adminErrors({ 404: 'not_found: no such enterprise.' }) },
      },
      handler: async (req, reply) => reply.code(201).send(await createOrg(ctx, callerOf(req), req.params.enterprise_id, req.body)),
    });
    r.get('/enterprises/:enterprise_id/orgs', {
      schema: {
        operationId: 'listOrganizations',
        tags: ['tenancy'],
        summary: "An enterprise's organizations, by name.",
        params: enterprisePath,
        querystring: pageQuery,
        response: { 200: orgPage, ...adminErrors({ 404: 'not_found: no such enterprise.' }) },
      },
      handler: (req) => listOrgs(ctx, callerOf(req), req.params.enterprise_id, req.query),
    });
    r.get('/orgs/:org_id', {
      schema: {
        operationId: 'getOrganization',
        tags: ['tenancy'],
        summary: 'One organization.',
        params: orgPath,
        response: { 200: orgRecord, ...adminErrors({ 404: 'not_found: no such organization.' }) },
      },
      handler: (req) => getOrg(ctx, callerOf(req), req.params.org_id),
    });

    r.post('/orgs/:org_id/categories', {
      config: storedAnswer(201, same),
      schema: {
        operationId: 'createCategory',
        tags: ['tenancy'],
        summary: 'Create a category of an organization.',
        headers: idempotencyHeaders,
        params: orgPath,
        body: categoryCreateInput,
        response: {
          201: categoryItem,
          ...adminErrors({ 404: 'not_found: no such organization.', 409: 'conflict: the organization has a category of that name.' }),
        },
      },
      handler: async (req, reply) => reply.code(201).send(await createCategory(ctx, callerOf(req), req.params.org_id, req.body)),
    });
    r.patch('/orgs/:org_id/categories/:category_id', {
      config: storedAnswer(200, same),
      schema: {
        operationId: 'updateCategory',
        tags: ['tenancy'],
        summary: "Change a category's name, color, severity or response level (Uncategorized is immutable: 409).",
        headers: idempotencyHeaders,
        params: orgPath.extend({ category_id: idParam }),
        body: categoryUpdateInput,
        response: {
          200: categoryItem,
          ...adminErrors({ 404: 'not_found: no such organization or category.', 409: 'conflict: Uncategorized is immutable, or the name is taken.' }),
        },
      },
      handler: (req) => updateCategory(ctx, callerOf(req), req.params.org_id, req.params.category_id, req.body),
    });

    r.post('/orgs/:org_id/users', {
      config: storedAnswer(201, same),
      schema: {
        operationId: 'createUser',
        tags: ['tenancy'],
        summary: 'Add a user to an organization.',
        headers: idempotencyHeaders,
        params: orgPath,
        body: userCreateInput,
        response: { 201: userItem, ...adminErrors({ 404: 'not_found: no such organization.', 409: 'conflict: the email is taken in this organization.' }) },
      },
      handler: async (req, reply) => reply.code(201).send(await createUser(ctx, callerOf(req), req.params.org_id, req.body)),
    });
    r.patch('/orgs/:org_id/users/:user_id', {
      config: storedAnswer(200, same),
      schema: {
        operationId: 'updateUser',
        tags: ['tenancy'],
        summary: "Change a user's names, email, phone, role, access level or status.",
        headers: idempotencyHeaders,
        params: orgPath.extend({ user_id: idParam }),
        body: userUpdateInput,
        response: { 200: userItem, ...adminErrors({ 404: 'not_found: no such organization or user.', 409: 'conflict: the email is taken.' }) },
      },
      handler: (req) => updateUser(ctx, callerOf(req), req.params.org_id, req.params.user_id, req.body),
    });
  };
