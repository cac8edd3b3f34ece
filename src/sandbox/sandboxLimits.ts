import { z } from 'zod';

/**
 * What one untrusted program may use, declared once: the sandbox applies exactly these (setrlimit
 * in the launcher, the tmpfs size, the output cap), and a suite's settings embed this schema.
 */
export const sandboxLimitsSchema = z
  .strictObject({
    cpuSeconds: z
      .number()
      .int()
      .min(1)
      .max(600)
      .default(10)
      .describe('CPU time (RLIMIT_CPU): SIGXCPU at this many seconds, SIGKILL one second later.'),
    memoryMiB: z
      .number()
      .int()
      .min(64)
      .max(65_536)
      .default(512)
      .describe('Address space of each process (RLIMIT_AS): an allocation past it fails (MemoryError).'),
    processes: z
      .number()
      .int()
      .min(1)
      .max(1024)
      .default(16)
      .describe("Processes and threads of the sandbox's uid (RLIMIT_NPROC), the program itself included."),
    fileSizeMiB: z
      .number()
      .int()
      .min(1)
      .max(1024)
      .default(16)
      .describe('Largest file the program may write (RLIMIT_FSIZE): a write past it fails with EFBIG.'),
    openFiles: z.number().int().min(16).max(4096).default(64).describe('Open file descriptors (RLIMIT_NOFILE).'),
    scratchMiB: z
      .number()
      .int()
      .min(1)
      .max(4096)
      .default(64)
      .describe('Size of the private tmpfs that holds the working dir, /tmp, /var/tmp and /dev/shm (RAM).'),
    outputKiB: z
      .number()
      .int()
      .min(1)
      .max(16_384)
      .default(64)
      .describe('Kept of stdout and of stderr each: the last this many KiB; the rest is counted and dropped.'),
  })
  .describe('Limits of one untrusted program in the sandbox.');
export type SandboxLimits = z.infer<typeof sandboxLimitsSchema>;

/** The unprivileged user a program runs as when the sandbox runs as root: nobody, who owns no files. */
export const NOBODY = { uid: 65_534, gid: 65_534 } as const;

/** One run: the program's source, its wall-clock deadline, its limits and how strictly to confine it. */
export const untrustedPythonRunSchema = z.strictObject({
  program: z.string().describe('Python source, run as the main module in an empty working dir.'),
  timeoutMs: z
    .number()
    .int()
    .min(100)
    .max(600_000)
    .default(10_000)
    .describe('Wall-clock deadline from the start, namespace setup included: then the whole run is SIGKILLed.'),
  limits: sandboxLimitsSchema.prefault({}),
  runAs: z
    .strictObject({ uid: z.number().int().min(1), gid: z.number().int().min(1) })
    .default(NOBODY)
    .describe('User and group of the program when the sandbox runs as root. Runs in parallel share its process limit.'),
  python: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Interpreter (default: /usr/bin/python3, else python3 on PATH); the sandbox user must be able to run it.',
    ),
  allowWithoutNetworkIsolation: z
    .boolean()
    .default(false)
    .describe(
      'Run with rlimits only where no namespace can be made (no network isolation, no private file system). Off: such a host refuses.',
    ),
});
export type UntrustedPythonRun = z.input<typeof untrustedPythonRunSchema>;
export type UntrustedPythonRunSettings = z.output<typeof untrustedPythonRunSchema>;
