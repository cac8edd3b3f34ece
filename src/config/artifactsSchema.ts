import { z } from 'zod';
import { parseS3Url, s3EndpointName } from '../core/s3Url.js';
import { retryPolicySchema } from '../core/rolloutSettingsSchema.js';

/**
 * Where transcripts, metrics, reports and ledgers go: a directory (`dir`, default `<home>/artifacts`)
 * or an S3-compatible object store (`url: s3://BUCKET/PREFIX`, with `endpoint` for one that is not
 * AWS). The store's credentials are never config: they come from AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN in the environment of whoever opens the store.
 */
export const artifactsConfigSchema = z
  .strictObject({
    dir: z.string().min(1).optional().describe('Default: `<home>/artifacts`.'),
    url: z
      .string()
      .superRefine((url, ctx) => {
        const parsed = parseS3Url(url);
        if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', message: parsed });
      })
      .optional()
      .describe('`s3://BUCKET/PREFIX`: keep artifacts in an object store instead of `dir`.'),
    endpoint: z
      .string()
      .url()
      .optional()
      .describe("The object store's URL (MinIO, SeaweedFS, Ceph, R2...); absent = AWS S3 of `region`."),
    region: z.string().min(1).default('us-east-1').describe('Set by AWS_REGION too.'),
    pathStyle: z
      .boolean()
      .optional()
      .describe(
        'Bucket in the path (`ENDPOINT/BUCKET/KEY`) rather than the host name; default: true when `endpoint` is set.',
      ),
    retry: retryPolicySchema
      .prefault({ maximumAttempts: 10 })
      .describe(
        "Retries of the rollouts' transcript writes (activities): past them a dialogue waits for the operator at the write, as at an LLM endpoint that stays down (`rollout.maxWaitMinutes`).",
      ),
  })
  .describe(
    'Where transcripts, metrics, reports and ledgers go: a directory, or an S3-compatible object store (credentials only from the AWS_* variables, never config).',
  )
  .superRefine((artifacts, ctx) => {
    if (artifacts.url !== undefined && artifacts.dir !== undefined)
      ctx.addIssue({ code: 'custom', path: ['url'], message: 'set artifacts.url or artifacts.dir, not both' });
    for (const key of ['endpoint', 'pathStyle'] as const)
      if (artifacts.url === undefined && artifacts[key] !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: `artifacts.${key} needs artifacts.url (s3://BUCKET/PREFIX)`,
        });
  });
export type ArtifactsConfig = z.infer<typeof artifactsConfigSchema>;

/** The store as a dialogue waiting at a transcript write names it: the bucket and its endpoint, or the directory. */
export function artifactStoreName(artifacts: ArtifactsConfig, home: string): string {
  if (artifacts.url !== undefined) return `${artifacts.url} at ${s3EndpointName(artifacts.endpoint, artifacts.region)}`;
  return artifacts.dir ?? `${home}/artifacts`;
}
