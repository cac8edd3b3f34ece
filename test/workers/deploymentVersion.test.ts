import assert from 'node:assert/strict';
import {
  buildIdFrom,
  deploymentNameFrom,
  deploymentVersionFrom,
  deploymentWorkerOptions,
} from '../../src/workers/deploymentVersion.js';

describe('worker deployment version (flags and environment)', () => {
  it('is absent without a build id: the worker stays unversioned, with no deployment options', () => {
    assert.equal(deploymentVersionFrom({}, {}), undefined);
    assert.deepEqual(deploymentWorkerOptions(undefined), {});
  });

  it('takes the flag over the environment, and the default deployment name', () => {
    assert.deepEqual(deploymentVersionFrom({ buildId: 'b2' }, { ATTUNE_WORKER_BUILD_ID: 'b1' }), {
      buildId: 'b2',
      deploymentName: 'attune',
    });
    assert.deepEqual(
      deploymentVersionFrom({}, { ATTUNE_WORKER_BUILD_ID: '1.4.0', ATTUNE_WORKER_DEPLOYMENT_NAME: 'attune-eu' }),
      { buildId: '1.4.0', deploymentName: 'attune-eu' },
    );
    assert.equal(buildIdFrom(undefined, { ATTUNE_WORKER_BUILD_ID: '' }), undefined, 'an empty variable is unset');
  });

  it('versions the worker with AUTO_UPGRADE as the default behaviour', () => {
    assert.deepEqual(deploymentWorkerOptions({ buildId: 'b1', deploymentName: 'attune' }), {
      workerDeploymentOptions: {
        useWorkerVersioning: true,
        version: { buildId: 'b1', deploymentName: 'attune' },
        defaultVersioningBehavior: 'AUTO_UPGRADE',
      },
    });
  });

  it('rejects bad values naming the flag and the variable', () => {
    assert.throws(() => buildIdFrom('', {}), /build id \(--deployment-version \/ ATTUNE_WORKER_BUILD_ID\) is empty/);
    assert.throws(() => buildIdFrom('a b', {}), /build id .* "a b" contains a character/);
    assert.throws(() => buildIdFrom('x'.repeat(256), {}), /longer than 255/);
    assert.throws(() => deploymentNameFrom('attune.eu', {}), /deployment name \(--deployment-name/);
    assert.throws(() => deploymentNameFrom('attune:eu', {}), /contains a character/);
    assert.throws(() => deploymentVersionFrom({ deploymentName: 'attune' }, {}), /--deployment-name needs a build id/);
  });
});
