import type { WorkerDeploymentVersion } from '@temporalio/common';
import type { WorkerOptions } from '@temporalio/worker';

export type { WorkerDeploymentVersion };

/** The deployment name when a worker gets a build id but no name. */
export const DEFAULT_DEPLOYMENT_NAME = 'attune';

export const BUILD_ID_ENV = 'ATTUNE_WORKER_BUILD_ID';
export const DEPLOYMENT_NAME_ENV = 'ATTUNE_WORKER_DEPLOYMENT_NAME';

const MAX_LENGTH = 255;

function checked(value: string, what: string, forbidden: RegExp): string {
  if (value.length === 0) throw new Error(`${what} is empty`);
  if (value.length > MAX_LENGTH) throw new Error(`${what} is longer than ${MAX_LENGTH} characters`);
  if (forbidden.test(value))
    throw new Error(`${what} "${value}" contains a character it may not (${forbidden.source})`);
  return value;
}

/**
 * The deployment name from a flag, else the environment, else the default. It may not hold the
 * separators of a version's canonical string (`name.buildId`, `name:buildId`).
 */
export function deploymentNameFrom(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return checked(
    flag ?? (env[DEPLOYMENT_NAME_ENV] || DEFAULT_DEPLOYMENT_NAME),
    `deployment name (--deployment-name / ${DEPLOYMENT_NAME_ENV})`,
    /[\s\p{Cc}.:]/u,
  );
}

/** A build id from a flag, else the environment; undefined when neither names one. */
export function buildIdFrom(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const buildId = flag ?? (env[BUILD_ID_ENV] || undefined);
  return buildId === undefined
    ? undefined
    : checked(buildId, `build id (--deployment-version / ${BUILD_ID_ENV})`, /[\s\p{Cc}]/u);
}

/** The worker's deployment version; none without a build id (an unversioned worker, as before versioning). */
export function deploymentVersionFrom(
  flags: { buildId?: string | undefined; deploymentName?: string | undefined },
  env: NodeJS.ProcessEnv = process.env,
): WorkerDeploymentVersion | undefined {
  const buildId = buildIdFrom(flags.buildId, env);
  if (buildId === undefined) {
    if (flags.deploymentName !== undefined)
      throw new Error(`--deployment-name needs a build id too (--deployment-version or ${BUILD_ID_ENV})`);
    return undefined;
  }
  return { buildId, deploymentName: deploymentNameFrom(flags.deploymentName, env) };
}

/**
 * Worker options for a deployment version. Workflows not annotated otherwise auto-upgrade: a
 * training run lives for hours or days and must move to the new code at a rolling restart, so its
 * code changes go behind `patched()`. Rollouts pin themselves (see `rollout.ts`).
 */
export function deploymentWorkerOptions(
  version: WorkerDeploymentVersion | undefined,
): Pick<WorkerOptions, 'workerDeploymentOptions'> {
  if (!version) return {};
  return {
    workerDeploymentOptions: { useWorkerVersioning: true, version, defaultVersioningBehavior: 'AUTO_UPGRADE' },
  };
}
