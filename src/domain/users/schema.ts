import { z } from 'zod';
import { pageOf, timestamp, uuid } from '../shared/schema.js';

export const USER_ROLES = ['responder', 'user', 'visitor'] as const;

export const userItem = z
  .object({
    userId: uuid,
    role: z.enum(USER_ROLES),
    firstName: z.string(),
    lastName: z.string(),
    email: z.string(),
    phoneNumber: z.string().nullable(),
    accessLevel: z.enum(['admin', 'member']).describe('Administrative tier, separate from the response role.'),
    status: z.enum(['active', 'invited', 'disabled']),
    profilePhotoUrl: z.string().nullable(),
    ownedDeviceId: z.string().nullable(),
    ownedDeviceName: z.string().nullable(),
    enterpriseId: uuid,
    enterpriseName: z.string(),
    partnerId: uuid,
    partnerName: z.string(),
    createdAt: timestamp,
    lastLoginAt: timestamp.nullable(),
  })
  .meta({ id: 'User' });

export const userPage = pageOf(userItem).meta({ id: 'UserPage' });
export type UserItem = z.infer<typeof userItem>;

const userFields = {
  firstName: z.string().trim().min(1).max(128),
  lastName: z.string().trim().min(1).max(128),
  email: z.email().max(320),
  role: z.enum(USER_ROLES),
  phoneNumber: z.string().max(32),
  accessLevel: z.enum(['admin', 'member']),
  status: z.enum(['active', 'invited', 'disabled']),
};

export const userCreateInput = z.strictObject({
  ...userFields,
  role: userFields.role.default('user'),
  phoneNumber: userFields.phoneNumber.optional(),
  accessLevel: userFields.accessLevel.default('member'),
  status: userFields.status.default('active'),
});

export const userUpdateInput = z
  .strictObject({ ...userFields, phoneNumber: userFields.phoneNumber.nullable() })
  .partial()
  .refine((v) => Object.keys(v).length > 0, 'name at least one field to change');
