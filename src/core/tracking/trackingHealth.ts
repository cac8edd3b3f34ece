export const TRACKING_BACKENDS = ['mlflow', 'tensorboard', 'wandb'] as const;
export type TrackingBackend = (typeof TRACKING_BACKENDS)[number];

/** Whether one backend is behind: the steps it has not taken yet and since when it fails. */
export interface TrackingHealth {
  backend: TrackingBackend;
  /** Steps recorded but not yet logged to this backend (oldest first). */
  pendingSteps: number[];
  /** ISO time of the first failure in the current outage; null when the backend answers. */
  downSince: string | null;
  lastError: string | null;
}

/** `attune status`'s line for the trackers: null when every one is up to date. */
export function trackingStatusLine(health: TrackingHealth[] | undefined): string | null {
  const behind = (health ?? []).filter((h) => h.downSince !== null || h.pendingSteps.length > 0);
  if (behind.length === 0) return null;
  return behind
    .map((h) => {
      const n = h.pendingSteps.length;
      const since = h.downSince ? ` down since ${h.downSince}` : '';
      const why = h.lastError ? ` (${h.lastError})` : '';
      return `${h.backend}${since}, ${n} step${n === 1 ? '' : 's'} pending${why}`;
    })
    .join('; ');
}
