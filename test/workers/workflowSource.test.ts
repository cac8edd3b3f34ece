import assert from 'node:assert/strict';
import { delimiter, join } from 'node:path';
import {
  TEST_ONLY_WORKFLOW_INTERCEPTOR_MODULES_ENV as ENV,
  testOnlyWorkflowInterceptorModules,
} from '../../src/workers/workflowSource.js';

const FIXTURE = join(__dirname, '..', 'fixtures', 'workflowInterceptors', 'upgradePatchInterceptor.ts');

describe('test-only workflow interceptor modules', () => {
  it('are none unless the variable is set', () => {
    assert.deepEqual(testOnlyWorkflowInterceptorModules({}), []);
    assert.deepEqual(testOnlyWorkflowInterceptorModules({ [ENV]: '' }), []);
  });

  it('are the absolute paths the variable lists', () => {
    assert.deepEqual(testOnlyWorkflowInterceptorModules({ [ENV]: [FIXTURE, FIXTURE].join(delimiter) }), [
      FIXTURE,
      FIXTURE,
    ]);
  });

  it('reject a relative or missing path, naming the variable', () => {
    for (const path of ['upgradePatchInterceptor.ts', join(__dirname, 'missing.ts')])
      assert.throws(
        () => testOnlyWorkflowInterceptorModules({ [ENV]: path }),
        (e: Error) => e.message.startsWith(`${ENV}: "${path}"`),
      );
  });
});
