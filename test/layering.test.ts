// The layout's rules, checked mechanically: a package's shipped code imports
// only the workspace packages it depends on (never a dev dependency), the
// dependencies form no cycle (packages import only downward), and the SDK and
// the environments never pull native code. Test-side code (tests, a package's
// src/testing/ entry, benchmarks) may use dev dependencies.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "..");
const NATIVE = ["@opentinker/engine", "@opentinker/kernels"];
const NATIVE_FREE = ["@opentinker/sdk", "@opentinker/envs", "@opentinker/protocol", "@opentinker/tokenizer"];

interface Workspace {
  name: string;
  dir: string;
  dependencies: string[];
  devDependencies: string[];
}

function workspaces(): Workspace[] {
  return ["packages", "apps"].flatMap((group) =>
    readdirSync(path.join(ROOT, group)).map((entry) => {
      const dir = path.join(ROOT, group, entry);
      const manifest = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as {
        name: string;
        dependencies?: Record<string, string>;
        devDependencies?: Record<string, string>;
      };
      const local = (deps?: Record<string, string>) =>
        Object.keys(deps ?? {}).filter((d) => d.startsWith("@opentinker/"));
      return {
        name: manifest.name,
        dir,
        dependencies: local(manifest.dependencies),
        devDependencies: local(manifest.devDependencies),
      };
    }),
  );
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const file = path.join(dir, entry);
    if (entry === "node_modules" || entry === "generated" || entry.startsWith(".")) return [];
    if (statSync(file).isDirectory()) return sourceFiles(file);
    return /\.(ts|tsx|mts)$/.test(entry) && !entry.endsWith(".d.ts") ? [file] : [];
  });
}

/** Test-side code may use dev dependencies; everything else ships. */
function isTestSide(file: string): boolean {
  return /\.(test|cases)\.tsx?$/.test(file) || file.includes(`${path.sep}testing${path.sep}`);
}

/**
 * The workspace packages a file imports at run time (static and dynamic
 * imports, re-exports). `import type` is erased before anything runs, so it
 * pulls no code (the SDK's typed client names the API's router type that way).
 */
function workspaceImports(file: string): string[] {
  const text = readFileSync(file, "utf8").replace(/^\s*import type [^;]*;/gm, "");
  const found = new Set<string>();
  for (const match of text.matchAll(/(?:from|import)\s*\(?\s*["'](@opentinker\/[a-z0-9-]+)[^"']*["']/g)) {
    found.add(match[1] as string);
  }
  return [...found];
}

function closure(all: Map<string, Workspace>, name: string, seen = new Set<string>()): Set<string> {
  for (const dep of all.get(name)?.dependencies ?? []) {
    if (seen.has(dep)) continue;
    seen.add(dep);
    closure(all, dep, seen);
  }
  return seen;
}

describe("the layout's rules", () => {
  const all = new Map(workspaces().map((w) => [w.name, w]));

  it("shipped code imports only the workspace packages it depends on", () => {
    const wrong: string[] = [];
    for (const ws of all.values()) {
      const srcDir = path.join(ws.dir, "src");
      for (const file of sourceFiles(srcDir)) {
        const allowed = new Set([
          ws.name,
          ...ws.dependencies,
          ...(isTestSide(file) ? ws.devDependencies : []),
        ]);
        for (const imported of workspaceImports(file)) {
          if (!allowed.has(imported)) wrong.push(`${path.relative(ROOT, file)} imports ${imported}`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it("the packages' dependencies form no cycle", () => {
    const cyclic = [...all.keys()].filter((name) => closure(all, name).has(name));
    expect(cyclic).toEqual([]);
  });

  it("the SDK, the environments, the protocol and the tokenizer never pull native code", () => {
    for (const name of NATIVE_FREE) {
      expect(all.has(name), `${name} is a workspace`).toBe(true);
      const pulled = [...closure(all, name)].filter((dep) => NATIVE.includes(dep));
      expect(pulled, `${name} depends on`).toEqual([]);
    }
  });

  it("tells test-side code and type-only imports from what ships (the checks can fail)", () => {
    const sdk = all.get("@opentinker/sdk") as Workspace;
    const file = path.join(sdk.dir, "src", "index.ts");
    expect(isTestSide(file)).toBe(false);
    expect(sdk.dependencies).not.toContain("@opentinker/engine");
    expect(isTestSide(path.join(sdk.dir, "src", "testing", "index.ts"))).toBe(true);
    expect(workspaceImports(path.join(sdk.dir, "src", "testing", "index.ts"))).toContain(
      "@opentinker/engine",
    );
    const client = path.join(sdk.dir, "src", "remote", "trpc-client.ts");
    expect(readFileSync(client, "utf8")).toContain('import type { AppRouter } from "@opentinker/api"');
    expect(workspaceImports(client)).not.toContain("@opentinker/api");
  });
});
