// `shapes`: single turn, image + text. The prompt holds a synthetic picture (an
// image chunk with PNG bytes) and a question: name the shape, or count the
// objects. Exact-match reward; malformed answers get the format penalty.
import type { ModelInput } from "@opentinker/protocol";
import type { ChatRenderer, Env, RendererTokenizer, RlDataset, StepResult } from "@opentinker/sdk";
import { drawShapes, type PlacedShape, SHAPE_KINDS, type ShapeKind } from "./shapes-image.ts";
import {
  malformed,
  rendererFor,
  scored,
  type TaskDatasetOptions,
  type TextEnvOptions,
  taskDataset,
} from "./text-env.ts";

export interface ShapesTask {
  question: "name" | "count";
  shapes: PlacedShape[];
  /** "circle", "square", "triangle", or a count such as "3". */
  answer: string;
}

const COLORS: [number, number, number][] = [
  [200, 40, 40],
  [40, 120, 200],
  [40, 160, 70],
  [220, 160, 30],
];

export function shapesTask(random: () => number, size = 32): ShapesTask {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)] as T;
  const question = random() < 0.5 ? "name" : "count";
  const count = question === "name" ? 1 : 1 + Math.floor(random() * 4);
  const kind: ShapeKind = pick(SHAPE_KINDS);
  const r = question === "name" ? size / 4 : size / 10;
  const shapes = Array.from({ length: count }, (_, i) => ({
    kind,
    // Count tasks put objects in separate cells of a 2×2 grid so they never overlap.
    cx: question === "name" ? size / 2 + (random() - 0.5) * size * 0.2 : ((i % 2) + 0.5) * (size / 2),
    cy:
      question === "name" ? size / 2 + (random() - 0.5) * size * 0.2 : (Math.floor(i / 2) + 0.5) * (size / 2),
    r,
    color: pick(COLORS),
  }));
  return { question, shapes, answer: question === "name" ? kind : String(count) };
}

const taskKey = (t: ShapesTask) =>
  `${t.question}:${t.answer}:${t.shapes.map((s) => `${Math.round(s.cx)},${Math.round(s.cy)},${s.color.join("")}`).join(";")}`;

export interface ShapesOptions extends TextEnvOptions {
  /** Image side in pixels. */
  size?: number;
  /** Sequence positions the vision tower gives the image. */
  imageTokens?: number;
}

export class ShapesEnv implements Env {
  private readonly renderer: ChatRenderer;

  constructor(
    readonly task: ShapesTask,
    tokenizer: RendererTokenizer,
    private readonly options: ShapesOptions = {},
  ) {
    this.renderer = rendererFor(tokenizer, options);
  }

  async initialObservation() {
    const question =
      this.task.question === "name"
        ? "Which shape is this: circle, square or triangle? Reply with the word only."
        : "How many shapes are in the picture? Reply with the number only.";
    const text = this.renderer.prompt([{ role: "user", content: question }]);
    const png = drawShapes(this.task.shapes, this.options.size ?? 32);
    // The picture goes first, then the rendered question.
    const observation: ModelInput = {
      chunks: [
        {
          type: "image",
          format: "png",
          data: png.toString("base64"),
          expectedTokens: this.options.imageTokens ?? 16,
        },
        ...text.chunks,
      ],
    };
    return { observation, stop: this.renderer.stop() };
  }

  async step(action: number[]): Promise<StepResult> {
    const { text, complete } = this.renderer.parse(action);
    const answer = text.trim().toLowerCase();
    const wellFormed =
      complete &&
      (this.task.question === "name" ? SHAPE_KINDS.includes(answer as ShapeKind) : /^\d+$/.test(answer));
    return wellFormed ? scored(answer === this.task.answer) : malformed(this.options);
  }
}

export interface ShapesDatasetOptions extends ShapesOptions, TaskDatasetOptions {}

export function shapesDataset(o: ShapesDatasetOptions): RlDataset {
  return taskDataset(o, {
    tag: "shapes",
    draw: (r) => shapesTask(r, o.size),
    key: taskKey,
    makeEnv: (task) => new ShapesEnv(task, o.tokenizer, o),
  });
}
