// node-llama-cpp as the benchmark's side-by-side reference. It is not a
// dependency of the project: it is installed on first use into a cache outside
// the repository, with its prebuilt CPU binary only (no download of llama.cpp
// sources, no build), and loaded from there by path.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { z } from "zod";
import { progress } from "./timing.ts";

/** Pinned so figures are comparable run to run; bump deliberately. */
export const NODE_LLAMA_CPP_VERSION = "3.22.1";

/** One directory per version, so a bump installs beside the old one. */
export const NODE_LLAMA_CPP_DIR = path.join(
  homedir(),
  ".cache",
  "opentinker-bench",
  `node-llama-cpp-${NODE_LLAMA_CPP_VERSION}`,
);

// The hand-written subset of node-llama-cpp's API the bench uses.
export type LlamaToken = number;

export interface LlamaNextOutput {
  next: { token?: LlamaToken | null; logits?: Map<LlamaToken, number> };
}

export type LlamaControlledInput =
  | LlamaToken
  | [
      LlamaToken,
      { generateNext?: { logits?: boolean; token?: boolean; options?: { temperature?: number } } },
    ];

export interface LlamaContextSequence {
  evaluate(
    tokens: LlamaToken[],
    options?: { temperature?: number; seed?: number },
  ): AsyncGenerator<LlamaToken, void, void>;
  controlledEvaluate(input: LlamaControlledInput[]): Promise<(LlamaNextOutput | undefined)[]>;
  clearHistory(): Promise<void>;
}

export interface LlamaContext {
  readonly flashAttention: boolean;
  readonly idealThreads: number;
  readonly batchSize: number;
  getSequence(): LlamaContextSequence;
  dispose(): Promise<void>;
}

export interface LlamaModel {
  createContext(options: {
    contextSize: number;
    batchSize: number;
    sequences: number;
    threads: { ideal: number; min: number };
    flashAttention: boolean | "auto";
    experimentalKvCacheKeyType?: string;
    experimentalKvCacheValueType?: string;
  }): Promise<LlamaContext>;
  dispose(): Promise<void>;
}

export interface Llama {
  readonly buildType: "localBuild" | "prebuilt";
  readonly gpu: string | false;
  readonly llamaCppRelease: { repo: string; release: string };
  readonly systemInfo: string;
  loadModel(options: { modelPath: string; gpuLayers: number }): Promise<LlamaModel>;
  dispose(): Promise<void>;
}

interface NodeLlamaCppModule {
  getLlama(options: {
    gpu: false;
    build: "never";
    usePrebuiltBinaries: true;
    skipDownload: true;
    progressLogs: false;
    logLevel: "error" | "warn" | "info" | "debug";
    maxThreads: number;
  }): Promise<Llama>;
}

/** npm's name for this platform's prebuilt binaries (CPU only where there is a choice). */
function binaryPackage(): string {
  const names: Record<string, string> = {
    "linux-x64": "linux-x64",
    "linux-arm64": "linux-arm64",
    "darwin-arm64": "mac-arm64-metal",
    "darwin-x64": "mac-x64",
    "win32-x64": "win-x64",
    "win32-arm64": "win-arm64",
  };
  const name = names[`${process.platform}-${process.arch}`];
  if (!name) throw new Error(`node-llama-cpp has no prebuilt binary for ${process.platform}-${process.arch}`);
  return `@node-llama-cpp/${name}`;
}

const InstalledSchema = z.object({ version: z.string() });

function installedVersion(): string | null {
  const manifest = path.join(NODE_LLAMA_CPP_DIR, "node_modules", "node-llama-cpp", "package.json");
  if (!existsSync(manifest)) return null;
  return InstalledSchema.parse(JSON.parse(readFileSync(manifest, "utf8"))).version;
}

/** Installs node-llama-cpp into NODE_LLAMA_CPP_DIR unless that version is there already. */
function ensureInstalled(): void {
  if (installedVersion() === NODE_LLAMA_CPP_VERSION) return;
  const packages = [
    `node-llama-cpp@${NODE_LLAMA_CPP_VERSION}`,
    `${binaryPackage()}@${NODE_LLAMA_CPP_VERSION}`,
  ];
  progress(`llama: installing ${packages.join(" ")} into ${NODE_LLAMA_CPP_DIR}`);
  const run = spawnSync(
    "npm",
    [
      "install",
      "--prefix",
      NODE_LLAMA_CPP_DIR,
      // The other optional dependencies are every platform's and GPU's binaries (hundreds of MB).
      "--omit=optional",
      // Its postinstall would fall back to downloading and building llama.cpp; we want the prebuilt or nothing.
      "--ignore-scripts",
      "--no-audit",
      "--no-fund",
      ...packages,
    ],
    { encoding: "utf8", env: { ...process.env, NODE_LLAMA_CPP_SKIP_DOWNLOAD: "true" } },
  );
  if (run.status !== 0)
    throw new Error(`npm install ${packages.join(" ")} failed (exit ${run.status}): ${run.stderr.trim()}`);
}

/**
 * node-llama-cpp with its prebuilt CPU binary, `threads` threads at most.
 * Throws with the reason when it cannot be installed or loaded.
 */
export async function loadLlamaCpp(threads: number): Promise<Llama> {
  ensureInstalled();
  const entry = path.join(NODE_LLAMA_CPP_DIR, "node_modules", "node-llama-cpp", "dist", "index.js");
  const loaded: unknown = await import(pathToFileURL(entry).href);
  if (typeof (loaded as Partial<NodeLlamaCppModule>).getLlama !== "function")
    throw new Error(`${entry} does not export getLlama`);
  return (loaded as NodeLlamaCppModule).getLlama({
    gpu: false,
    build: "never",
    usePrebuiltBinaries: true,
    skipDownload: true,
    progressLogs: false,
    logLevel: "error",
    maxThreads: threads,
  });
}
