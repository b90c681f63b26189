// A loss of the caller's own over the policy's per-token logprobs, trained
// through the server's losses: a forward pass gives the logprobs, the caller's
// function gives its loss and the loss's gradient with respect to each
// logprob, and a cross_entropy forwardBackward with per-token weights
// −∂loss/∂logprob applies exactly that gradient (cross_entropy is
// −Σ weight·logprob, so its gradient through each logprob is −weight). This is
// Tinker's forward_backward_custom, without autograd: the caller supplies the
// gradient.
import {
  type Datum,
  type ForwardBackwardOutput,
  float32Tensor,
  lossInput,
  type TrainingClient,
} from "@opentinker/protocol";

export interface CustomLoss {
  /** The loss's value (reported as `custom_loss:sum`). */
  loss: number;
  /** ∂loss/∂logprob, one array per datum, one value per target position. */
  grad: number[][];
  /** More metrics to report beside the server's. */
  metrics?: Record<string, number>;
}

/**
 * One forward/backward of `lossFn` over `data` (datums carrying `targetTokens`;
 * any `weights` they carry are ignored). Gradients accumulate like any
 * forwardBackward's; an optimStep applies them.
 */
export async function forwardBackwardCustom(
  training: TrainingClient,
  data: Datum[],
  lossFn: (logprobs: number[][], data: Datum[]) => CustomLoss,
): Promise<ForwardBackwardOutput> {
  const scored = data.map((d) =>
    withWeights(
      d,
      lossInput(d, "targetTokens").map(() => 0),
    ),
  );
  const forward = await (await training.forward(scored, "cross_entropy")).result();
  const logprobs = forward.lossFnOutputs.map((o) => o.logprobs?.data ?? []);
  const custom = lossFn(logprobs, data);
  if (custom.grad.length !== data.length)
    throw new RangeError(
      `forwardBackwardCustom: grad has ${custom.grad.length} arrays for ${data.length} datums`,
    );
  const linear = data.map((d, i) => {
    const grad = custom.grad[i] ?? [];
    if (grad.length !== (logprobs[i]?.length ?? 0))
      throw new RangeError(
        `forwardBackwardCustom: grad ${i} has ${grad.length} values for ${logprobs[i]?.length} targets`,
      );
    return withWeights(
      d,
      grad.map((g) => -g),
    );
  });
  const backward = await (await training.forwardBackward(linear, "cross_entropy")).result();
  return { ...backward, metrics: { ...backward.metrics, ...custom.metrics, "custom_loss:sum": custom.loss } };
}

const withWeights = (d: Datum, weights: number[]): Datum => ({
  modelInput: d.modelInput,
  lossFnInputs: {
    targetTokens: d.lossFnInputs.targetTokens as Datum["lossFnInputs"][string],
    weights: float32Tensor(weights),
  },
});
