// Rows as they go out over the API: dates as ISO strings, big integers as numbers.
import { z } from "zod";

export const ZTimestamp = z.string();
export const iso = (date: Date): string => date.toISOString();
export const isoOrNull = (date: Date | null): string | null => (date ? date.toISOString() : null);
