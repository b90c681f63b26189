// A small SVG line plot of metrics over steps, for docs/results.md and quick looks.
export interface Series {
  name: string;
  points: [number, number][];
}

const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea"];

export function svgPlot(title: string, series: Series[], width = 480, height = 240): string {
  const pad = { left: 44, right: 12, top: 28, bottom: 32 };
  const all = series.flatMap((s) => s.points);
  const xs = all.map((p) => p[0]);
  const ys = all.map((p) => p[1]);
  const [x0, x1] = [Math.min(0, ...xs), Math.max(1, ...xs)];
  const [y0, y1] = [Math.min(0, ...ys), Math.max(1, ...ys)];
  const sx = (x: number) => pad.left + ((x - x0) / (x1 - x0 || 1)) * (width - pad.left - pad.right);
  const sy = (y: number) =>
    height - pad.bottom - ((y - y0) / (y1 - y0 || 1)) * (height - pad.top - pad.bottom);
  const lines = series.map((s, i) => {
    const d = s.points.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(" ");
    const color = COLORS[i % COLORS.length];
    return `<polyline fill="none" stroke="${color}" stroke-width="2" points="${d}"/><text x="${width - pad.right - 4}" y="${pad.top + 14 * (i + 1)}" text-anchor="end" fill="${color}" font-size="11">${s.name}</text>`;
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">`,
    // Read out by screen readers (and required by the linter for committed plots).
    `<title>${title}: ${series.map((s) => s.name).join(", ")} by step</title>`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${pad.left}" y="16" font-size="13">${title}</text>`,
    `<line x1="${pad.left}" y1="${sy(y0)}" x2="${width - pad.right}" y2="${sy(y0)}" stroke="#999"/>`,
    `<line x1="${pad.left}" y1="${sy(y0)}" x2="${pad.left}" y2="${sy(y1)}" stroke="#999"/>`,
    `<text x="${pad.left - 6}" y="${sy(y1) + 4}" text-anchor="end" font-size="10">${y1.toFixed(2)}</text>`,
    `<text x="${pad.left - 6}" y="${sy(y0) + 4}" text-anchor="end" font-size="10">${y0.toFixed(2)}</text>`,
    `<text x="${width - pad.right}" y="${height - 10}" text-anchor="end" font-size="10">step ${x1}</text>`,
    ...lines,
    "</svg>",
  ].join("\n");
}
