import { writeFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Series, SimulationResult, Workload } from './types';

const WIDTH = 1200;
const PANEL = 230;
const MARGIN = { left: 80, right: 170, top: 75, gap: 45 };
const COLORS: Record<string, string> = { 'no-pool': '#d62728', 'fill-max': '#ff7f0e', forecast: '#1f77b4' };

/** SVG chart: arrival rate, pool depth and max latency per step, one line per policy. */
export function chartSvg(workload: Workload, results: readonly SimulationResult[], title: string): string {
  const factor = Math.max(1, Math.ceil(results[0].series.arrivals.length / MAX_POINTS));
  const series = downsample(results[0].series, factor);
  const stepS = series.stepMs / 1000;
  const steps = series.arrivals.length;
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const height = MARGIN.top + 3 * PANEL + 2 * MARGIN.gap + 50;
  const x = (i: number): number => MARGIN.left + (i / (steps - 1)) * plotW;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="sans-serif" font-size="13">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${MARGIN.left}" y="28" font-size="17" font-weight="bold">${escape(title)}</text>`,
  ];
  const days = (steps * series.stepMs) / 86_400_000;

  const frame: Frame = { parts, x, plotW, days };
  const panel = (...args: PanelArgs): void => drawPanel(frame, ...args);

  const rate = Array.from(series.arrivals, (c) => c / stepS);
  const maxRate = maxOf([rate], 1);
  panel(
    0,
    `Arrival rate (requests/s, ${stepS / 60}-min means) - ${workload.name}`,
    [{ name: 'arrivals', values: rate }],
    { min: 0, max: maxRate * 1.1, ticks: niceTicks(maxRate * 1.1), format: (v) => `${v}` },
  );
  const all = results.map((r) => ({ policy: r.policy, series: downsample(r.series, factor) }));
  const pooled = all.filter((r) => r.policy !== 'no-pool');
  const maxPool = maxOf(
    pooled.map((r) => r.series.pool),
    1,
  );
  panel(
    1,
    'Pool depth (stored keys)',
    pooled.map((r) => ({ name: r.policy, values: r.series.pool })),
    { min: 0, max: maxPool * 1.05, ticks: niceTicks(maxPool * 1.05), format: compact },
  );
  const maxLatency = maxOf(
    all.map((r) => r.series.maxLatency),
    10_000,
  );
  const top = 10 ** Math.ceil(Math.log10(maxLatency));
  const ticks: number[] = [];
  for (let v = 1; v <= top; v *= 10) ticks.push(v);
  panel(
    2,
    `Max latency per ${stepS / 60} min (ms, log scale), ${results[0].hsmCount} HSM(s)`,
    all.map((r) => ({ name: r.policy, values: r.series.maxLatency })),
    { min: 1, max: top, log: true, ticks, format: compact },
    [
      { value: 300, label: '300 ms' },
      { value: 3000, label: '3000 ms' },
    ],
  );
  parts.push('</svg>');
  return parts.join('\n');
}

/** What every panel of one chart shares: the SVG parts so far, the x scale, the plot width, the days shown. */
interface Frame {
  readonly parts: string[];
  readonly x: (i: number) => number;
  readonly plotW: number;
  readonly days: number;
}

type PanelArgs = [
  p: number,
  label: string,
  lines: { name: string; values: ArrayLike<number> }[],
  scale: { min: number; max: number; log?: boolean; ticks: number[]; format: (v: number) => string },
  guides?: { value: number; label: string }[],
];

/** Panel `p` (0 at the top): frame, ticks, day lines (labelled under the last panel), guides, one line per series. */
function drawPanel(
  { parts, x, plotW, days }: Frame,
  ...[p, label, lines, scale, guides = []]: PanelArgs
): void {
  const top = MARGIN.top + p * (PANEL + MARGIN.gap);
  const y = (v: number): number => {
    const t = scale.log
      ? (Math.log10(Math.max(v, scale.min)) - Math.log10(scale.min)) /
        (Math.log10(scale.max) - Math.log10(scale.min))
      : (v - scale.min) / (scale.max - scale.min || 1);
    return top + PANEL - Math.min(1, Math.max(0, t)) * PANEL;
  };
  parts.push(
    `<rect x="${MARGIN.left}" y="${top}" width="${plotW}" height="${PANEL}" fill="none" stroke="#999"/>`,
  );
  parts.push(`<text x="${MARGIN.left}" y="${top - 8}" font-weight="bold">${escape(label)}</text>`);
  for (const tick of scale.ticks) {
    parts.push(
      `<line x1="${MARGIN.left}" x2="${MARGIN.left + plotW}" y1="${y(tick)}" y2="${y(tick)}" stroke="#eee"/>`,
    );
    parts.push(
      `<text x="${MARGIN.left - 6}" y="${y(tick) + 4}" text-anchor="end">${scale.format(tick)}</text>`,
    );
  }
  for (let d = 0; d <= days; d += days > 60 ? 28 : days > 14 ? 7 : 1) {
    const xd = MARGIN.left + (d / days) * plotW;
    parts.push(`<line x1="${xd}" x2="${xd}" y1="${top}" y2="${top + PANEL}" stroke="#eee"/>`);
    if (p === 2) parts.push(`<text x="${xd}" y="${top + PANEL + 16}" text-anchor="middle">day ${d}</text>`);
  }
  for (const g of guides) {
    parts.push(
      `<line x1="${MARGIN.left}" x2="${MARGIN.left + plotW}" y1="${y(g.value)}" y2="${y(g.value)}" stroke="#555" stroke-dasharray="5,4"/>`,
      `<text x="${MARGIN.left + plotW + 6}" y="${y(g.value) + 4}" fill="#555">${escape(g.label)}</text>`,
    );
  }
  lines.forEach((line, n) => {
    const points: string[] = [];
    for (let i = 0; i < line.values.length; i++)
      points.push(`${x(i).toFixed(1)},${y(line.values[i]).toFixed(1)}`);
    const color = COLORS[line.name] ?? '#333';
    parts.push(`<polyline fill="none" stroke="${color}" stroke-width="1.2" points="${points.join(' ')}"/>`);
    parts.push(
      `<text x="${MARGIN.left + plotW + 6}" y="${top + 16 + n * 16}" fill="${color}">${escape(line.name)}</text>`,
    );
  });
}

/** Renders the SVG to PNG with resvg (a prebuilt binary from the npm registry). */
export async function writePng(svg: string, path: string): Promise<void> {
  const { Resvg } = await import('@resvg/resvg-js');
  const png = new Resvg(svg, { background: 'white', font: { loadSystemFonts: true } }).render().asPng();
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, png);
}

const MAX_POINTS = 4000;

/** Merges `factor` steps into one: arrivals summed, pool at the step's end, latency the max. */
function downsample(s: Series, factor: number): Series {
  if (factor <= 1) return s;
  const n = Math.ceil(s.arrivals.length / factor);
  const arrivals = new Float64Array(n);
  const pool = new Float64Array(n);
  const maxLatency = new Float64Array(n);
  for (let i = 0; i < s.arrivals.length; i++) {
    const j = Math.floor(i / factor);
    arrivals[j] += s.arrivals[i];
    pool[j] = s.pool[i];
    if (s.maxLatency[i] > maxLatency[j]) maxLatency[j] = s.maxLatency[i];
  }
  return { stepMs: s.stepMs * factor, arrivals, pool, maxLatency };
}

/** Max over arrays without spreading them (a year of 5-min steps overflows the call stack). */
function maxOf(arrays: readonly ArrayLike<number>[], floor: number): number {
  let max = floor;
  for (const a of arrays) for (let i = 0; i < a.length; i++) if (a[i] > max) max = a[i];
  return max;
}

function niceTicks(max: number): number[] {
  const raw = max / 5;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const out: number[] = [];
  for (let v = 0; v <= max; v += step) out.push(v);
  return out;
}

function compact(v: number): string {
  if (v >= 1e6) return `${+(v / 1e6).toFixed(1)}M`;
  if (v >= 1e3) return `${+(v / 1e3).toFixed(1)}k`;
  return `${+v.toFixed(2)}`;
}

function escape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
