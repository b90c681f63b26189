// The sampler's scheduler: which requests hold KV blocks and which token rows the
// next step computes. Pure bookkeeping over the KV-cache manager (block ids, no
// weights, no logits), so it can be driven and tested without a model.
//
// A request's life: waiting → prefill (its prompt's sequence admitted; chunks of
// the prompt are computed, step by step) → forking (the prompt's logits started
// every completion; the completions wait for their blocks) → decode (one row per
// live completion per step) → done. A full cache keeps requests waiting
// (back-pressure); when nothing at all can run, the newest active request is
// preempted and restarts later. Requests carry a tenant: admission and each step's
// token budget are shared round robin across tenants, so one team's big rollout
// cannot starve another team's small request.
import type { ImageSpan } from "./block-hash.ts";
import type { CopyInstruction, KvCacheManager } from "./kv-cache.ts";

/** Where a request stands; the phases that hold the prompt's KV sequence name it. */
export type RequestState =
  | { kind: "waiting" }
  | { kind: "prefill"; parent: string }
  | { kind: "forking"; parent: string }
  | { kind: "decode" }
  | { kind: "done" };

export interface ScheduledCompletion {
  /** Its KV sequence, once forked from the prompt's. */
  readonly id: string;
  readonly tokens: readonly number[];
  readonly stopReason: "stop" | "length" | null;
}

/** What the scheduler reads of a request (the front's requests carry more). */
export interface ScheduledRequest {
  readonly id: string;
  readonly tenant: string;
  /** Prefix-cache namespace: blocks are shared only within one policy version. */
  readonly policyKey: string;
  readonly prompt: readonly number[];
  readonly images: readonly ImageSpan[];
  readonly completions: readonly ScheduledCompletion[];
  /**
   * Its prompt is scored (prompt logprobs): every prompt position is computed,
   * none taken from the prefix cache (a cached block holds K/V, not the logits
   * its positions need), and the rows that predict a prompt token want logits.
   */
  readonly scorePrompt?: boolean;
  state: RequestState;
}

/** What a row's logits are for. */
export type RowOutput<C> =
  /** A prompt row before the last: only its K/V are wanted. */
  | { kind: "none" }
  /** A prompt row before the last of a scored prompt: its logits score the next prompt token. */
  | { kind: "score" }
  /** The prompt's last row: its logits give every completion's first token. */
  | { kind: "prompt" }
  /** A decode row: its logits give this completion's next token. */
  | { kind: "decode"; completion: C };

export interface Row<R extends ScheduledRequest> {
  request: R;
  seqId: string;
  token: number;
  position: number;
  kvSlot: number;
  output: RowOutput<R["completions"][number]>;
}

export interface StepPlan<R extends ScheduledRequest> {
  /** The rows of the step; empty when nothing could run. */
  rows: Row<R>[];
  /** Copy-on-write the step does before it writes the rows' K/V. */
  copies: CopyInstruction[];
  /** Requests whose every completion stopped on its first token: done, for the front to settle. */
  finished: R[];
  /** Nothing could run, so this request went back to the head of the queue with its blocks freed. */
  preempted?: R;
}

/** Whether prompt position `p` gets a score: the prompt is scored and p is not an image placeholder. */
function scores(request: ScheduledRequest, p: number): boolean {
  return request.scorePrompt === true && !request.images.some((i) => p >= i.start && p < i.start + i.length);
}

/** Tenants in a fixed order, starting after `last` (round robin across calls). */
function rotation(tenants: Iterable<string>, last: string): string[] {
  const sorted = [...new Set(tenants)].sort();
  const start = sorted.findIndex((t) => t > last);
  return start <= 0 ? sorted : [...sorted.slice(start), ...sorted.slice(0, start)];
}

export class Scheduler<R extends ScheduledRequest> {
  private readonly waiting: R[] = [];
  private readonly active: R[] = [];
  /** Prompt positions computed by prefill steps (cached prefixes are not). */
  private prefillTokens = 0;
  /** The tenant admitted last and the one served first last step: the next turn starts after each. */
  private admittedLast = "";
  private servedFirst = "";

  constructor(
    private readonly kv: KvCacheManager,
    private readonly maxTokensPerStep: number,
  ) {}

  enqueue(request: R): void {
    request.state = { kind: "waiting" };
    this.waiting.push(request);
  }

  /** Every request in flight, active ones first. */
  requests(): R[] {
    return [...this.active, ...this.waiting];
  }

  /** Takes a request out (finished, failed or aborted) and frees its sequences. */
  remove(request: R): void {
    for (const queue of [this.active, this.waiting]) {
      const at = queue.indexOf(request);
      if (at >= 0) queue.splice(at, 1);
    }
    this.freeSequences(request);
    request.state = { kind: "done" };
  }

  stats() {
    return { waiting: this.waiting.length, active: this.active.length, prefillTokens: this.prefillTokens };
  }

  /** The next step: admit what fits, fork finished prompts, then the rows within the token budget. */
  plan(): StepPlan<R> {
    this.admit();
    const finished = this.forkReady();
    const copies: CopyInstruction[] = [];
    const rows = this.buildRows(copies);
    if (rows.length > 0) return { rows, copies, finished };
    return { rows, copies, finished, preempted: this.preempt() };
  }

  /** The prompt's last row has its logits: the request's completions are about to get their first token. */
  prefilled(request: R): void {
    if (request.state.kind !== "prefill") throw new Error(`scheduler: ${request.id} is not prefilling`);
    request.state = { kind: "forking", parent: request.state.parent };
  }

  /**
   * A completion got a token. While decoding, a stopped completion frees its
   * blocks; true when that was the request's last one (the request is removed).
   */
  advanced(request: R, completion: R["completions"][number]): boolean {
    if (request.state.kind !== "decode") return false;
    if (completion.stopReason) this.kv.free(completion.id);
    if (!request.completions.every((c) => c.stopReason)) return false;
    this.remove(request);
    return true;
  }

  /** The step wrote the K/V of its rows (rows of sequences freed meanwhile are skipped). */
  committed(rows: readonly Row<R>[]): void {
    for (const row of rows) if (this.kv.has(row.seqId)) this.kv.commit(row.seqId, 1);
  }

  private freeSequences(request: R): void {
    const { state } = request;
    if (state.kind === "prefill" || state.kind === "forking") this.kv.free(state.parent);
    for (const c of request.completions) this.kv.free(c.id);
  }

  /**
   * Admits waiting requests while the cache has room: each turn goes to the next
   * tenant after the one admitted last, and takes that tenant's oldest request.
   * When it does not fit, admission stops there (nobody overtakes it: it is
   * first once blocks free up).
   */
  private admit(): void {
    for (;;) {
      const heads = new Map<string, R>();
      for (const r of this.waiting) if (!heads.has(r.tenant)) heads.set(r.tenant, r);
      const tenant = rotation(heads.keys(), this.admittedLast)[0];
      if (tenant === undefined) return;
      const request = heads.get(tenant) as R;
      const { prompt, images, policyKey } = request;
      const parent = `${request.id}/prompt`;
      const reuse = !request.scorePrompt;
      // Keep one block per completion free for its first token.
      if (!this.kv.canAllocate(prompt, policyKey, request.completions.length, images, reuse)) return;
      if (!this.kv.admit(parent, policyKey, prompt, images, reuse)) return;
      this.waiting.splice(this.waiting.indexOf(request), 1);
      this.admittedLast = tenant;
      request.state = { kind: "prefill", parent };
      this.active.push(request);
    }
  }

  /** Nothing could run: the newest active request goes back to the head of the queue. */
  private preempt(): R | undefined {
    const victim = this.active.pop();
    if (!victim) return undefined;
    this.freeSequences(victim);
    victim.state = { kind: "waiting" };
    this.waiting.unshift(victim);
    return victim;
  }

  /** Prompts whose first tokens are sampled: fork the live completions off the prompt's blocks. */
  private forkReady(): R[] {
    const finished: R[] = [];
    for (const request of [...this.active]) {
      const { state } = request;
      if (state.kind !== "forking") continue;
      const live = request.completions.filter((c) => !c.stopReason).map((c) => c.id);
      // Not enough blocks for the children's first tokens yet: it waits, forking.
      if (!this.kv.fork(state.parent, live)) continue;
      this.kv.free(state.parent);
      request.state = { kind: "decode" };
      if (live.length > 0) continue;
      this.remove(request);
      finished.push(request);
    }
    return finished;
  }

  /**
   * The rows of the next step, within the token budget: decode rows first, then
   * prefill chunks, each shared round robin across tenants (one decode row per
   * tenant per turn; the prefill budget split evenly), so every tenant with work
   * gets a share of every step.
   */
  private buildRows(copies: CopyInstruction[]): Row<R>[] {
    const rows: Row<R>[] = [];
    const decoding = this.activeByTenant("decode");
    const prefilling = this.activeByTenant("prefill");
    const tenants = rotation([...decoding.keys(), ...prefilling.keys()], this.servedFirst);
    this.servedFirst = tenants[0] ?? this.servedFirst;
    const budget = this.maxTokensPerStep - this.decodeRows(tenants, decoding, rows, copies);
    this.prefillShares(budget, tenants, prefilling, rows);
    return rows;
  }

  /** One decode row per tenant per turn, until the budget or the completions run out; returns how many. */
  private decodeRows(
    tenants: string[],
    decoding: Map<string, R[]>,
    rows: Row<R>[],
    copies: CopyInstruction[],
  ) {
    let budget = this.maxTokensPerStep;
    const queues = tenants.map((t) =>
      (decoding.get(t) ?? []).flatMap((r) => r.completions.map((c) => ({ r, c }))),
    );
    const next = queues.map(() => 0);
    for (let served = true; budget > 0 && served; ) {
      served = false;
      for (const [i, queue] of queues.entries()) {
        // This tenant's next completion that takes a row this step.
        while (budget > 0 && (next[i] as number) < queue.length) {
          const { r, c } = queue[(next[i] as number)++] as { r: R; c: R["completions"][number] };
          if (!this.decodeRow(r, c, rows, copies)) continue;
          budget--;
          served = true;
          break;
        }
      }
    }
    return this.maxTokensPerStep - budget;
  }

  /** What is left of the budget goes to prefill chunks, split evenly across the tenants prefilling. */
  private prefillShares(budget: number, tenants: string[], prefilling: Map<string, R[]>, rows: Row<R>[]) {
    const withPrefill = tenants.filter((t) => prefilling.has(t));
    for (const [i, tenant] of withPrefill.entries()) {
      let share = Math.ceil(budget / (withPrefill.length - i));
      for (const request of prefilling.get(tenant) ?? []) {
        if (share === 0) break;
        const taken = this.prefillRows(request, share, rows);
        share -= taken;
        budget -= taken;
      }
    }
  }

  /** Active requests in a phase, by tenant, in the order they became active. */
  private activeByTenant(kind: "prefill" | "decode"): Map<string, R[]> {
    const out = new Map<string, R[]>();
    for (const r of this.active) {
      if (r.state.kind !== kind) continue;
      const list = out.get(r.tenant);
      if (list) list.push(r);
      else out.set(r.tenant, [r]);
    }
    return out;
  }

  /** A decode row for a completion that is still generating; false when it has none this step. */
  private decodeRow(request: R, c: R["completions"][number], rows: Row<R>[], copies: CopyInstruction[]) {
    if (c.stopReason) return false;
    const token = c.tokens[c.tokens.length - 1] as number;
    const slots = this.kv.appendSlots(c.id, [token]);
    if (!slots) return false; // no block this step; it waits (or is preempted)
    copies.push(...slots.copies);
    rows.push({
      request,
      seqId: c.id,
      token,
      position: request.prompt.length + c.tokens.length - 1,
      kvSlot: slots.slots[0] as number,
      output: { kind: "decode", completion: c },
    });
    return true;
  }

  /** Up to `limit` prompt rows of a prefilling request, from where it stands; returns how many. */
  private prefillRows(request: R, limit: number, rows: Row<R>[]): number {
    if (request.state.kind !== "prefill") return 0;
    const { parent } = request.state;
    const start = this.kv.computed(parent);
    const end = Math.min(request.prompt.length, start + limit);
    const slots = this.kv.slots(parent, start, end);
    for (let p = start; p < end; p++) {
      rows.push({
        request,
        seqId: parent,
        token: request.prompt[p] as number,
        position: p,
        kvSlot: slots[p - start] as number,
        output: {
          kind: p === request.prompt.length - 1 ? "prompt" : scores(request, p + 1) ? "score" : "none",
        },
      });
    }
    this.prefillTokens += end - start;
    return end - start;
  }
}
