/** The `data` of an emergency event, with the emergency's record already encoded. */
export const eventDataJson = (recordJson: string, exercise: boolean): string => `{"emergency":${recordJson},"exercise":${exercise}}`;
