// checksums.json beside a built-in model: the sha256 of every file the build
// writes and the build's configuration, since float results depend on it (the
// kernel thread count, whether OpenBLAS did the matrix products, the CPU's SIMD).
import { readFile } from "node:fs/promises";
import path from "node:path";
import { kernelInfo, sha256File, type WrittenFile, writeJsonFile } from "@opentinker/engine";
import { z } from "zod";

export const CHECKSUMS_FILE = "checksums.json";

export const ZBuildEnvironment = z.object({
  kernelThreads: z.number().int().positive(),
  blas: z.string().nullable(),
  simd: z.string(),
  node: z.string(),
});
export type BuildEnvironment = z.infer<typeof ZBuildEnvironment>;

export const ZChecksums = z.object({
  model: z.string(),
  /** File name → sha256 (hex). */
  files: z.record(z.string(), z.string().regex(/^[0-9a-f]{64}$/)),
  build: ZBuildEnvironment,
  /** The recipe the files were built from (shape, corpus, steps, seeds). */
  recipe: z.record(z.string(), z.unknown()),
});
export type Checksums = z.infer<typeof ZChecksums>;

export async function readChecksums(dir: string): Promise<Checksums> {
  const file = path.join(dir, CHECKSUMS_FILE);
  let json: unknown;
  try {
    json = JSON.parse(await readFile(file, "utf8"));
  } catch (error) {
    throw new Error(`${file}: cannot read it (${error instanceof Error ? error.message : String(error)})`);
  }
  const parsed = ZChecksums.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`${file}: ${issue?.path.join(".") || "value"}: ${issue?.message}`);
  }
  return parsed.data;
}

export interface ChecksumMismatch {
  file: string;
  expected: string;
  actual: string | null;
}

/** Files in `dir` whose sha256 differs from `expected` (actual null: the file is missing). */
export async function compareChecksums(
  dir: string,
  expected: Record<string, string>,
): Promise<ChecksumMismatch[]> {
  const out: ChecksumMismatch[] = [];
  for (const [file, sha] of Object.entries(expected)) {
    const actual = await sha256File(path.join(dir, file)).catch(() => null);
    if (actual !== sha) out.push({ file, expected: sha, actual });
  }
  return out;
}

/** What the float results of a build depend on, as this process runs. */
export function buildEnvironment(): BuildEnvironment {
  const info = kernelInfo();
  return { kernelThreads: info.threads, blas: info.blas, simd: info.simd, node: process.version };
}

/** Records a finished build's files, environment and recipe in `dir`/checksums.json. */
export async function writeChecksums(
  dir: string,
  model: string,
  files: readonly WrittenFile[],
  recipe: object,
): Promise<Checksums> {
  const checksums: Checksums = {
    model,
    files: Object.fromEntries(files.map((f) => [path.basename(f.path), f.sha256])),
    build: buildEnvironment(),
    recipe: JSON.parse(JSON.stringify(recipe)),
  };
  await writeJsonFile(path.join(dir, CHECKSUMS_FILE), checksums);
  return checksums;
}
