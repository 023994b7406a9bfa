export const toJson = (value: unknown): string | null => (value === undefined || value === null ? null : JSON.stringify(value));
export const fromJson = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));
