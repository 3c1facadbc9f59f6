/** Where a door reports what its operators should see: names and codes only, never tokens or claims. */
export interface DoorLog {
  warn(message: string, context: Record<string, unknown>): void;
  error(message: string, context: Record<string, unknown>): void;
}
