// The built-in base models: names, kinds and the directories they live in
// (committed under packages/models/built-in/, loadable with loadBaseModel like
// any Hugging Face model directory).
import { fileURLToPath } from "node:url";

export interface BuiltInModel {
  name: string;
  kind: "text" | "vision-language";
  /** Absolute path of the model directory. */
  dir: string;
  description: string;
}

/** packages/models/built-in/ */
export const BUILT_IN_ROOT = fileURLToPath(new URL("../built-in/", import.meta.url));

const at = (name: string) => fileURLToPath(new URL(`../built-in/${name}/`, import.meta.url));

export const DEFAULT_TEXT_MODEL = "opentinker-text-tiny";
export const DEFAULT_VL_MODEL = "opentinker-vl-tiny";
/** The text model that knows the calculator's call format (the tool-use setting). */
export const TOOL_MODEL = "opentinker-tool-tiny";

export const BUILT_IN_MODELS: readonly BuiltInModel[] = [
  {
    name: DEFAULT_TEXT_MODEL,
    kind: "text",
    dir: at(DEFAULT_TEXT_MODEL),
    description:
      "Llama-family, 4 layers × 128 hidden, byte-level BPE; pretrained on arithmetic, guess-the-number and nim",
  },
  {
    name: DEFAULT_VL_MODEL,
    kind: "vision-language",
    dir: at(DEFAULT_VL_MODEL),
    description:
      "Llama-family, 2 layers × 128 hidden, 32×32 images in 8×8 patches → 16 soft tokens; pretrained on shapes",
  },
  {
    name: TOOL_MODEL,
    kind: "text",
    dir: at(TOOL_MODEL),
    description:
      "Llama-family, 4 layers × 128 hidden, byte-level BPE; pretrained on arithmetic with a calculator tool",
  },
];

export function builtInModel(name: string): BuiltInModel {
  const found = BUILT_IN_MODELS.find((m) => m.name === name);
  if (!found)
    throw new RangeError(
      `unknown built-in model "${name}" (known: ${BUILT_IN_MODELS.map((m) => m.name).join(", ")})`,
    );
  return found;
}
