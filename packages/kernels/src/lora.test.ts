import { describe, expect, it } from "vitest";
import { loadNative } from "./loader.ts";
import { createLoraTable, type LoraAdapterWeights, loraBackward, loraForward } from "./ops/lora.ts";
import { type RefLoraAdapter, refLoraBackward, refLoraForward } from "./reference/lora.ts";
import { expectClose, randomF32, rng } from "./test-utils.ts";

interface Case {
  n: number;
  dIn: number;
  dOut: number;
  ranks: number[];
  slots: Int32Array;
}

function makeCase(
  random: () => number,
  n: number,
  dIn: number,
  dOut: number,
  ranks: number[],
  noneShare = 0.2,
): Case {
  const slots = new Int32Array(n);
  for (let i = 0; i < n; i++) slots[i] = random() < noneShare ? -1 : Math.floor(random() * ranks.length);
  return { n, dIn, dOut, ranks, slots };
}

function weights(random: () => number, c: Case): { native: LoraAdapterWeights[]; ref: RefLoraAdapter[] } {
  const native = c.ranks.map((rank) => ({
    a: randomF32(rank * c.dIn, random, 0.5),
    b: randomF32(c.dOut * rank, random, 0.5),
    scale: 16 / rank,
  }));
  return { native, ref: native.map((w, i) => ({ ...w, rank: c.ranks[i] as number })) };
}

// fp32 sums of dIn (then rank) products of magnitude ≤ 0.5: a few ulps per term.
const tol = (c: Case) => 3e-6 * (c.dIn + Math.max(...c.ranks, 1) * 16);

describe("multi-LoRA forward", () => {
  const random = rng(42);
  const cases: [string, Case][] = [
    ["one decode row", makeCase(random, 1, 64, 48, [8], 0)],
    ["mixed ranks 1–64 with rows of no adapter", makeCase(random, 37, 67, 45, [1, 3, 16, 64, 7])],
    ["odd sizes and a rank that is not a multiple of 8", makeCase(random, 19, 13, 9, [5, 11])],
    ["prefill-sized batch at model width", makeCase(random, 64, 896, 136, [16, 8, 32])],
    ["every row without an adapter", makeCase(random, 9, 16, 16, [4], 1)],
    ["large scattered groups (the gathered GEMM path)", makeCase(random, 160, 40, 56, [8, 3])],
    [
      "one large contiguous group (the in-place GEMM path)",
      { n: 120, dIn: 48, dOut: 40, ranks: [16], slots: new Int32Array(120) },
    ],
  ];
  for (const [name, c] of cases) {
    it(`adds each row's own adapter delta: ${name}`, () => {
      const w = weights(random, c);
      const x = randomF32(c.n * c.dIn, random);
      const y = randomF32(c.n * c.dOut, random);
      const expected = refLoraForward(x, c.n, c.dIn, c.dOut, c.slots, w.ref, y);
      loraForward(x, c.n, c.slots, createLoraTable(c.dIn, c.dOut, w.native), y);
      expectClose(y, expected, tol(c), 1e-5);
    });
  }

  it("an adapter with no rows in the batch (an empty group) changes nothing", () => {
    const c: Case = { n: 4, dIn: 8, dOut: 8, ranks: [4, 4, 4], slots: new Int32Array([0, 0, 2, -1]) };
    const w = weights(rng(1), c);
    const x = randomF32(c.n * c.dIn, rng(2));
    const y = new Float32Array(c.n * c.dOut);
    loraForward(x, c.n, c.slots, createLoraTable(c.dIn, c.dOut, w.native), y);
    expectClose(
      y,
      refLoraForward(x, c.n, c.dIn, c.dOut, c.slots, w.ref, new Float32Array(c.n * c.dOut)),
      1e-5,
    );
    expect(Array.from(y.subarray(3 * c.dOut))).toEqual(new Array(c.dOut).fill(0));
  });

  it("rows are independent of the order and company they come in", () => {
    const random = rng(9);
    const c = makeCase(random, 24, 32, 24, [4, 8, 16]);
    const w = weights(random, c);
    const table = createLoraTable(c.dIn, c.dOut, w.native);
    const x = randomF32(c.n * c.dIn, random);
    const together = new Float32Array(c.n * c.dOut);
    loraForward(x, c.n, c.slots, table, together);
    for (let i = 0; i < c.n; i++) {
      const alone = new Float32Array(c.dOut);
      loraForward(x.subarray(i * c.dIn, (i + 1) * c.dIn), 1, c.slots.subarray(i, i + 1), table, alone);
      expectClose(alone, together.subarray(i * c.dOut, (i + 1) * c.dOut), 1e-6, 1e-6);
    }
  });

  it("rowInvariant: a row's delta is bit-identical alone or among 160 rows (past the GEMM and pairing paths)", () => {
    const random = rng(10);
    const c = makeCase(random, 160, 64, 40, [16, 8], 0.1);
    const table = createLoraTable(c.dIn, c.dOut, weights(random, c).native);
    const x = randomF32(c.n * c.dIn, random);
    const together = new Float32Array(c.n * c.dOut);
    loraForward(x, c.n, c.slots, table, together, true);
    for (let i = 0; i < c.n; i++) {
      const alone = new Float32Array(c.dOut);
      loraForward(x.subarray(i * c.dIn, (i + 1) * c.dIn), 1, c.slots.subarray(i, i + 1), table, alone, true);
      expect(alone).toEqual(together.subarray(i * c.dOut, (i + 1) * c.dOut));
    }
  });
});

describe("multi-LoRA backward", () => {
  it("the reference backward matches central finite differences (float64)", () => {
    const random = rng(5);
    const c = makeCase(random, 5, 6, 4, [2, 3], 0.2);
    const w = weights(random, c);
    const x = Float64Array.from(randomF32(c.n * c.dIn, random));
    const dy = Float64Array.from(randomF32(c.n * c.dOut, random));
    const loss = (xv: Float64Array, table: RefLoraAdapter[]) => {
      const y = refLoraForward(xv, c.n, c.dIn, c.dOut, c.slots, table, new Float64Array(c.n * c.dOut));
      return y.reduce((sum, v, i) => sum + v * (dy[i] as number), 0);
    };
    const grads = refLoraBackward(x, dy, c.n, c.dIn, c.dOut, c.slots, w.ref);
    const h = 1e-6;
    const fd = (bump: (delta: number) => void) => {
      bump(h);
      const up = loss(x, w.ref);
      bump(-2 * h);
      const down = loss(x, w.ref);
      bump(h);
      return (up - down) / (2 * h);
    };
    for (let i = 0; i < x.length; i++) {
      expect(
        fd((d) => {
          x[i] = (x[i] as number) + d;
        }),
      ).toBeCloseTo(grads.dx[i] as number, 6);
    }
    w.ref.forEach((ad, g) => {
      const a = Float64Array.from(ad.a);
      const b = Float64Array.from(ad.b);
      w.ref[g] = { ...ad, a, b };
      for (let i = 0; i < a.length; i++) {
        expect(
          fd((d) => {
            a[i] = (a[i] as number) + d;
          }),
        ).toBeCloseTo((grads.da[g] as Float64Array)[i] as number, 6);
      }
      for (let i = 0; i < b.length; i++) {
        expect(
          fd((d) => {
            b[i] = (b[i] as number) + d;
          }),
        ).toBeCloseTo((grads.db[g] as Float64Array)[i] as number, 6);
      }
    });
  });

  for (const [name, n, dIn, dOut, ranks] of [
    ["small, mixed ranks", 11, 10, 7, [1, 5, 8]],
    ["model width, rows of no adapter", 40, 896, 64, [16, 64]],
    ["large groups of scattered rows", 150, 24, 40, [4, 9]],
  ] as [string, number, number, number, number[]][]) {
    it(`accumulates dA, dB and the LoRA part of dX like the reference: ${name}`, () => {
      const random = rng(17);
      const c = makeCase(random, n, dIn, dOut, ranks);
      const w = weights(random, c);
      const x = randomF32(n * dIn, random);
      const dy = randomF32(n * dOut, random);
      const expected = refLoraBackward(x, dy, n, dIn, dOut, c.slots, w.ref);
      // Start from non-zero buffers: the op must add, not overwrite.
      const dx = randomF32(n * dIn, random);
      const dxStart = Float64Array.from(dx);
      const gradBuffers = w.native.map((ad) => ({
        a: randomF32(ad.a.length, random),
        b: randomF32(ad.b.length, random),
        scale: 1,
      }));
      const starts = gradBuffers.map((g) => ({ a: Float64Array.from(g.a), b: Float64Array.from(g.b) }));
      loraBackward(
        x,
        dy,
        n,
        c.slots,
        createLoraTable(dIn, dOut, w.native),
        dx,
        createLoraTable(dIn, dOut, gradBuffers),
      );
      const t = 4e-6 * (dIn + dOut);
      expectClose(
        dx,
        expected.dx.map((v, i) => v + (dxStart[i] as number)),
        t,
        1e-5,
      );
      gradBuffers.forEach((g, k) => {
        expectClose(
          g.a,
          (expected.da[k] as Float64Array).map(
            (v, i) => v + ((starts[k] as { a: Float64Array }).a[i] as number),
          ),
          t * 4,
          1e-5,
        );
        expectClose(
          g.b,
          (expected.db[k] as Float64Array).map(
            (v, i) => v + ((starts[k] as { b: Float64Array }).b[i] as number),
          ),
          t * 4,
          1e-5,
        );
      });
    });
  }

  it("one contiguous group (training a single adapter) gives the reference gradients", () => {
    const random = rng(29);
    const c: Case = { n: 64, dIn: 20, dOut: 28, ranks: [6], slots: new Int32Array(64) };
    const w = weights(random, c);
    const x = randomF32(c.n * c.dIn, random);
    const dy = randomF32(c.n * c.dOut, random);
    const expected = refLoraBackward(x, dy, c.n, c.dIn, c.dOut, c.slots, w.ref);
    const dx = new Float32Array(c.n * c.dIn);
    const g = { a: new Float32Array(6 * 20), b: new Float32Array(28 * 6), scale: 1 };
    loraBackward(x, dy, c.n, c.slots, createLoraTable(20, 28, w.native), dx, createLoraTable(20, 28, [g]));
    expectClose(dx, expected.dx, 1e-4, 1e-4);
    expectClose(g.a, expected.da[0] as Float64Array, 1e-3, 1e-4);
    expectClose(g.b, expected.db[0] as Float64Array, 1e-3, 1e-4);
  });

  it("dx may be omitted when the input gradient is not needed", () => {
    const random = rng(23);
    const c = makeCase(random, 6, 8, 8, [2]);
    const w = weights(random, c);
    const grads = createLoraTable(8, 8, [{ a: new Float32Array(16), b: new Float32Array(16), scale: 1 }]);
    loraBackward(
      randomF32(48, random),
      randomF32(48, random),
      6,
      c.slots,
      createLoraTable(8, 8, w.native),
      null,
      grads,
    );
  });
});

describe("multi-LoRA bad input", () => {
  const native = loadNative();
  const table = createLoraTable(4, 3, [
    { a: new Float32Array(8), b: new Float32Array(6), scale: 1 },
    { a: new Float32Array(4), b: new Float32Array(3), scale: 2 },
  ]);

  it("reports table shapes and ranks inferred from the weights", () => {
    expect([table.count, table.dIn, table.dOut, table.ranks]).toEqual([2, 4, 3, [2, 1]]);
  });

  it("a slot out of range is a RangeError naming the row, before anything is written", () => {
    const y = new Float32Array(6);
    expect(() => loraForward(new Float32Array(8), 2, new Int32Array([0, 2]), table, y)).toThrow(
      new RangeError("loraForward: slots[1] is 2, expected [-1, 2)"),
    );
    expect(() => loraForward(new Float32Array(8), 2, new Int32Array([-2, 0]), table, y)).toThrow(
      /slots\[0\] is -2/,
    );
    expect(Array.from(y)).toEqual([0, 0, 0, 0, 0, 0]);
  });

  it("lengths that do not match the shapes, and wrong array types, are refused by name", () => {
    expect(() => loraForward(new Float32Array(7), 2, new Int32Array(2), table, new Float32Array(6))).toThrow(
      new RangeError("loraForward: x has length 7, expected 8"),
    );
    expect(() =>
      loraForward(new Float32Array(8), 2, new Float32Array(2) as never, table, new Float32Array(6)),
    ).toThrow(new TypeError("loraForward: slots must be a Int32Array"));
    expect(() =>
      loraForward(new Float32Array(8), 2, new Int32Array(2), {} as never, new Float32Array(6)),
    ).toThrow(new TypeError("loraForward: table must be a LoraTable"));
  });

  it("a table whose weights disagree with dIn/dOut, or whose scale is NaN, is refused", () => {
    expect(() => new native.LoraTable(4, 3, [new Float32Array(6)], [new Float32Array(3)], [1])).toThrow(
      /LoraTable: as\[0\] has length 6, expected rank × dIn/,
    );
    expect(() => new native.LoraTable(4, 3, [new Float32Array(8)], [new Float32Array(5)], [1])).toThrow(
      /LoraTable: bs\[0\] has length 5, expected dOut × rank = 6/,
    );
    expect(
      () => new native.LoraTable(4, 3, [new Float32Array(8)], [new Float32Array(6)], [Number.NaN]),
    ).toThrow(/LoraTable: scales\[0\] must be a finite number/);
  });

  it("gradient tables must match the weight table's ranks", () => {
    const grads = createLoraTable(4, 3, [{ a: new Float32Array(8), b: new Float32Array(6), scale: 1 }]);
    expect(() =>
      loraBackward(new Float32Array(4), new Float32Array(3), 1, new Int32Array([0]), table, null, grads),
    ).toThrow(/loraBackward: grads must have the table's dIn, dOut, count and ranks/);
  });
});
