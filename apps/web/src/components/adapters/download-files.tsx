"use client";
// "Download PEFT files" (LoRA) or "Download model files" (full) for one version:
// fetches the snapshot's files (adapters.download, base64) and offers each as a
// file the browser saves.
import { useMutation } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { useTRPCClient } from "../../lib/trpc.ts";
import { errorMessage } from "../shared/api.ts";
import { bytes } from "../shared/format.ts";
import { Button } from "../ui.tsx";

interface SavedFile {
  name: string;
  url: string;
  size: number;
}

function decode(base64: string): Uint8Array<ArrayBuffer> {
  const text = atob(base64);
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}

export function DownloadFiles({
  handle,
  version,
  label,
}: {
  handle: string;
  version: number;
  label: string;
}) {
  const client = useTRPCClient();
  const [files, setFiles] = useState<SavedFile[]>([]);
  const download = useMutation({
    mutationFn: () => client.adapters.download.query({ handle }),
    onSuccess: ({ files: encoded }) =>
      setFiles(
        Object.entries(encoded).map(([name, base64]) => {
          const blob = new Blob([decode(base64)], {
            type: name.endsWith(".json") ? "application/json" : "application/octet-stream",
          });
          return { name, url: URL.createObjectURL(blob), size: blob.size };
        }),
      ),
  });
  // The object URLs live as long as their links.
  useEffect(
    () => () => {
      for (const f of files) URL.revokeObjectURL(f.url);
    },
    [files],
  );

  if (files.length > 0)
    return (
      <ul className="space-y-1" aria-label={`Files of version ${version}`}>
        {files.map((f) => (
          <li key={f.name}>
            <a href={f.url} download={f.name} className="text-blue-700 underline">
              {f.name}
            </a>{" "}
            <span className="text-xs text-gray-500">({bytes(f.size)})</span>
          </li>
        ))}
      </ul>
    );
  return (
    <div className="flex flex-wrap items-center gap-2">
      <Button
        variant="secondary"
        onClick={() => download.mutate()}
        disabled={download.isPending}
        aria-label={`${label} of version ${version}`}
      >
        {download.isPending ? "Preparing…" : label}
      </Button>
      {download.error && (
        <span role="alert" className="text-xs text-red-700">
          {errorMessage(download.error)}
        </span>
      )}
    </div>
  );
}
