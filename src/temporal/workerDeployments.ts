import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { WorkerDeploymentVersion } from '@temporalio/common';

export interface DeploymentVersionState {
  buildId: string;
  current: boolean;
  /** `draining`: no longer current, pinned workflows still run on it; `drained`: none do. */
  drainage: 'draining' | 'drained' | null;
  createdAt: string | null;
}

export interface DeploymentState {
  deploymentName: string;
  currentBuildId: string | null;
  versions: DeploymentVersionState[];
}

const DRAINAGE: Record<number, DeploymentVersionState['drainage']> = {
  [temporal.api.enums.v1.VersionDrainageStatus.VERSION_DRAINAGE_STATUS_DRAINING]: 'draining',
  [temporal.api.enums.v1.VersionDrainageStatus.VERSION_DRAINAGE_STATUS_DRAINED]: 'drained',
};

/**
 * Makes a version the deployment's current one: new workflows and the next task of every
 * AUTO_UPGRADE workflow go to its workers. The server refuses a version none of whose workers has
 * polled yet, and one whose workers leave out a task queue the current version serves.
 */
export async function setCurrentDeploymentVersion(
  client: Client,
  version: WorkerDeploymentVersion,
  identity: string,
): Promise<void> {
  await client.workflowService.setWorkerDeploymentCurrentVersion({
    namespace: client.options.namespace,
    deploymentName: version.deploymentName,
    buildId: version.buildId,
    identity,
  });
}

/** The deployment's current version and every version's drainage, as the server reports them. */
export async function describeDeployment(client: Client, deploymentName: string): Promise<DeploymentState> {
  const { workerDeploymentInfo: info } = await client.workflowService.describeWorkerDeployment({
    namespace: client.options.namespace,
    deploymentName,
  });
  const currentBuildId = info?.routingConfig?.currentDeploymentVersion?.buildId || null;
  return {
    deploymentName,
    currentBuildId,
    versions: (info?.versionSummaries ?? []).map((v) => {
      const buildId = v.deploymentVersion?.buildId ?? '';
      const seconds = v.createTime?.seconds;
      return {
        buildId,
        current: buildId === currentBuildId,
        drainage: DRAINAGE[v.drainageStatus ?? 0] ?? null,
        createdAt: seconds != null ? new Date(Number(seconds) * 1000).toISOString() : null,
      };
    }),
  };
}
