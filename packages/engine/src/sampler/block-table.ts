// Block tables in the layout the paged-attention kernel reads.

/** Entries past a sequence's last block. Never a valid id, so a read past a sequence's length fails loudly. */
export const NO_BLOCK = -1;

export interface PackedBlockTables {
  tables: Int32Array; // [numSeqs, maxBlocksPerSeq]: physical block ids, NO_BLOCK past each sequence's end
  numSeqs: number;
  maxBlocksPerSeq: number;
}

/**
 * Writes one block table per sequence into a row of one Int32Array. Without
 * `maxBlocksPerSeq` the widest table sets the width; a wider one can be asked
 * for (so a step can reuse a buffer shape) but never a narrower one.
 */
export function packBlockTables(
  tables: readonly ArrayLike<number>[],
  maxBlocksPerSeq?: number,
): PackedBlockTables {
  const widest = tables.reduce((max, t) => Math.max(max, t.length), 0);
  const width = maxBlocksPerSeq ?? widest;
  if (!Number.isInteger(width) || width < widest) {
    throw new RangeError(`packBlockTables: maxBlocksPerSeq is ${width}, expected an integer >= ${widest}`);
  }
  const out = new Int32Array(tables.length * width).fill(NO_BLOCK);
  tables.forEach((table, s) => {
    for (let b = 0; b < table.length; b++) out[s * width + b] = table[b] ?? NO_BLOCK;
  });
  return { tables: out, numSeqs: tables.length, maxBlocksPerSeq: width };
}

/** The cache slot of token position `position`: its block's first slot plus the offset in the block. */
export function slotOf(table: ArrayLike<number>, blockSize: number, position: number): number {
  const block = table[Math.floor(position / blockSize)];
  if (block === undefined) {
    throw new RangeError(`slotOf: position ${position} lies past the block table (${table.length} blocks)`);
  }
  return block * blockSize + (position % blockSize);
}
