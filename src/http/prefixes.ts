/** Where each API is mounted. */
export const API_PREFIX = '/api/public/v1';
export const ADMIN_PREFIX = '/api/admin/v1';
