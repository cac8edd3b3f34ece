import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { trainingWorkflowId } from '../../src/workflows/training.js';

const EventType = temporal.api.enums.v1.EventType;

/**
 * Where a run was when a fault began or ended, read from the server alone (a query would need a worker,
 * and the faults take workers away): whether the workflow was running, the steps the trainer had
 * applied, and what the workflow was waiting on (its pending activities and child workflows).
 */
export interface RunPosition {
  running: boolean;
  applied: number;
  pending: string;
}

/** An activity attempt after the first, as the history records it: what ran and why the one before failed. */
export interface ActivityRetry {
  workflowId: string;
  activityType: string;
  attempt: number;
  /** The failure type of an application failure, or `timeout` for a timed-out attempt (a dead worker). */
  lastFailure: string;
}

/** Reads, from the Temporal cluster the hosts share, where a run is and which of its activities were retried. */
export class RunEvidence {
  private constructor(
    private readonly connection: Connection,
    private readonly client: Client,
  ) {}

  static async connect(address: string): Promise<RunEvidence> {
    const connection = await Connection.connect({ address, connectTimeout: 5000 });
    return new RunEvidence(connection, new Client({ connection }));
  }

  async position(run: string, applied: number): Promise<RunPosition> {
    const { status, raw } = await this.client.workflow.getHandle(trainingWorkflowId(run)).describe();
    const activities = (raw.pendingActivities ?? []).map((a) => a.activityType?.name ?? '?');
    const children = raw.pendingChildren?.length ?? 0;
    const pending = [...activities, ...(children > 0 ? [`${children} child workflow(s)`] : [])].join(' + ');
    return { running: status.name === 'RUNNING', applied, pending: pending || 'a workflow task' };
  }

  /**
   * Every retried activity attempt in the run's workflow and all its child workflows (rollouts,
   * evaluations), and how many tasks each worker identity (`pid@host`) took: activities, and workflow
   * tasks (which carry the local activities a rollout with local calls runs, as markers). A workflow task
   * counts when it started, not when it completed: a worker killed while holding dialogues may have
   * completed none of their tasks yet, and it still ran the run's calls.
   */
  async retries(
    run: string,
  ): Promise<{ workflows: number; activities: number; retries: ActivityRetry[]; tasksBy: Map<string, number> }> {
    const found: ActivityRetry[] = [];
    const tasksBy = new Map<string, number>();
    const ran = (identity: string | null | undefined) =>
      tasksBy.set(identity ?? '?', (tasksBy.get(identity ?? '?') ?? 0) + 1);
    let workflows = 0;
    let activities = 0;
    // The training workflow continues as new between steps: each run of the chain, newest first.
    const pending: { id: string; runId?: string }[] = [{ id: trainingWorkflowId(run) }];
    for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
      const { id } = next;
      const history = await this.client.workflow.getHandle(id, next.runId).fetchHistory();
      workflows += 1;
      const previousRun =
        history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? undefined;
      if (previousRun) pending.push({ id, runId: previousRun });
      const scheduled = new Map<string, string>();
      for (const event of history.events ?? []) {
        const eventId = String(event.eventId);
        if (event.eventType === EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED) {
          const child = event.childWorkflowExecutionStartedEventAttributes?.workflowExecution?.workflowId;
          if (child) pending.push({ id: child });
        } else if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED) {
          ran(event.workflowTaskStartedEventAttributes?.identity);
        } else if (event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) {
          scheduled.set(eventId, event.activityTaskScheduledEventAttributes?.activityType?.name ?? '?');
        } else if (event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED) {
          const started = event.activityTaskStartedEventAttributes;
          activities += 1;
          ran(started?.identity);
          if (!started || (started.attempt ?? 1) <= 1) continue;
          const failure = started.lastFailure;
          found.push({
            workflowId: id,
            activityType: scheduled.get(String(started.scheduledEventId)) ?? '?',
            attempt: started.attempt ?? 0,
            lastFailure: failure?.timeoutFailureInfo ? 'timeout' : (failure?.applicationFailureInfo?.type ?? '?'),
          });
        }
      }
    }
    return { workflows, activities, retries: found, tasksBy };
  }

  /**
   * Which worker holds each running rollout of the run (its training workflow's and its evaluations'):
   * the identity (`pid@host`) that started the rollout's last workflow task. With local turns a rollout's
   * LLM calls run inside its workflow tasks on the worker that took them (sticky), until that worker
   * stops completing them and the task times out to another.
   */
  async rolloutHolders(run: string): Promise<Map<string, string>> {
    const holders = new Map<string, string>();
    const pending = [trainingWorkflowId(run)];
    for (let id = pending.pop(); id !== undefined; id = pending.pop()) {
      const { raw } = await this.client.workflow.getHandle(id).describe();
      for (const child of raw.pendingChildren ?? []) {
        if (!child.workflowId) continue;
        if (child.workflowTypeName === 'rollout') {
          const held = await this.holderOf(child.workflowId);
          if (held.running && held.identity) holders.set(child.workflowId, held.identity);
        } else pending.push(child.workflowId);
      }
    }
    return holders;
  }

  /** Whether the workflow is running, and the identity that started its last workflow task. */
  async holderOf(workflowId: string): Promise<{ running: boolean; identity: string | null }> {
    const handle = this.client.workflow.getHandle(workflowId);
    const { status } = await handle.describe();
    const history = await handle.fetchHistory();
    let identity: string | null = null;
    for (const event of history.events ?? [])
      if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED)
        identity = event.workflowTaskStartedEventAttributes?.identity ?? null;
    return { running: status.name === 'RUNNING', identity };
  }

  async close(): Promise<void> {
    await this.connection.close();
  }
}
