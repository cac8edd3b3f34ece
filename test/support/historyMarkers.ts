import type { temporal } from '@temporalio/proto';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** The activity type of each local-activity marker in a history, in order. */
export function localActivityTypes(events: HistoryEvent[]): string[] {
  return events.flatMap((e) => {
    const marker = e.markerRecordedEventAttributes;
    if (!marker || marker.markerName !== 'core_local_activity') return [];
    const data = marker.details?.data?.payloads?.[0]?.data;
    if (!data) throw new Error(`local-activity marker ${String(e.eventId)} has no data`);
    const parsed = JSON.parse(Buffer.from(data).toString('utf8')) as { activity_type?: string };
    return [parsed.activity_type ?? '?'];
  });
}

/** The patch ids recorded in a history (workflow `patched()` calls in new executions). */
export function patchIds(events: HistoryEvent[]): string[] {
  return events.flatMap((e) => {
    const marker = e.markerRecordedEventAttributes;
    if (!marker || marker.markerName !== 'core_patch') return [];
    const data = marker.details?.['patch-data']?.payloads?.[0]?.data;
    return data ? [(JSON.parse(Buffer.from(data).toString('utf8')) as { id: string }).id] : ['?'];
  });
}
