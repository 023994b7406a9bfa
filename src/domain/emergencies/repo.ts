/** The `data` of an emergency event, with the emergency's record already encoded. */
export const eventDataJson = (recordJson: string): string => `{"emergency":${recordJson}}`;
