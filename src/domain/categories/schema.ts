import { z } from 'zod';
import { ackDeadlineSeconds } from '../deadlines/schema.js';
import { pageOf, timestamp, uuid } from '../shared/schema.js';

export const RESPONSE_LEVELS = ['none', 'hold', 'secure', 'lockdown', 'evacuate', 'shelter', 'medical'] as const;

export const categoryItem = z
  .object({
    categoryId: uuid,
    name: z.string(),
    color: z.string().meta({ pattern: '^#[0-9A-F]{6}$', example: '#D32F2F' }),
    responseLevel: z.enum(RESPONSE_LEVELS),
    severity: z.number().int().min(0).max(5),
    isSystem: z.boolean(),
    createdAt: timestamp,
    ackDeadlineSeconds: z
      .number()
      .int()
      .nullable()
      .meta({ example: null })
      .describe("Acknowledgement deadline of this category's emergencies' events, overriding the organization's; null: the organization's."),
  })
  .meta({ id: 'Category' });

export const categoryPage = pageOf(categoryItem).meta({ id: 'CategoryPage' });

export type CategoryItem = z.infer<typeof categoryItem>;

export const categoryCreateInput = z.strictObject({
  name: z.string().trim().min(1).max(128),
  color: z
    .string()
    .regex(/^#[0-9a-fA-F]{6}$/, 'must be #RRGGBB')
    .transform((c) => c.toUpperCase()),
  severity: z.coerce.number().int().min(0).max(5),
  responseLevel: z.enum(RESPONSE_LEVELS),
  ackDeadlineSeconds: ackDeadlineSeconds
    .optional()
    .describe(
      "Seconds the organization's base stations have to acknowledge an event of this category's emergencies before an " +
        "emergency.delivery_overdue, overriding the organization's setting; null: the organization's.",
    ),
});

export const categoryUpdateInput = categoryCreateInput
  .partial()
  .refine((v) => Object.keys(v).length > 0, 'name at least one of name, color, severity, responseLevel, ackDeadlineSeconds');
