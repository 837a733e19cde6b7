// Charts over time, drawn with uPlot (vendor/, loaded before this module). Stacked charts
// draw each model's running total, topmost first, filled opaque, so that each band shows one
// model; the legend shows the model's own value, not the running total.

const COLORS = ["#2457c5", "#e07b39", "#2a9d8f", "#c2417b", "#7b61c9", "#8a9a2b", "#d1a517", "#5a6b7f"];
const charts = new Map();

// Every bucket start of the range (seconds, as uPlot wants), so that a quiet bucket is a 0.
function buckets(stats) {
  const step = stats.bucket_us;
  const first = Math.floor(stats.period_start / step) * step;
  const xs = [];
  for (let t = first; t < stats.period_end && xs.length < 5000; t += step) xs.push(t);
  return xs;
}

function size(container) {
  return { width: Math.max(container.clientWidth, 300), height: 240 };
}

function draw(container, options, data, points) {
  charts.get(container.id)?.destroy();
  container.replaceChildren();
  container.dataset.points = String(points);
  if (points === 0) {
    const empty = document.createElement("p");
    empty.className = "empty";
    empty.textContent = "No requests in this range.";
    container.append(empty);
    charts.delete(container.id);
    return;
  }
  const chart = new uPlot({ ...size(container), ...options }, data, container);
  charts.set(container.id, chart);
}


// Points with a value in any series.
function pointsOf(xs, series) {
  let n = 0;
  for (let i = 0; i < xs.length; i++) if (series.some((s) => s[i] != null && s[i] !== 0)) n++;
  return n;
}

// One stacked chart of `field` per model; `tick` writes the axis' values (`format` by default).
export function stacked(container, stats, field, format, tick = format) {
  const xs = buckets(stats);
  const index = new Map(xs.map((x, i) => [x, i]));
  const models = new Map();
  for (const row of stats.series) {
    const name = `${row.provider ?? "(none)"}/${row.model ?? "(none)"}`;
    if (!models.has(name)) models.set(name, new Array(xs.length).fill(0));
    const i = index.get(row.start_us);
    if (i !== undefined) models.get(name)[i] += field(row);
  }
  const names = [...models.keys()];
  const own = names.map((n) => models.get(n));
  const running = [];
  own.forEach((values, k) => running.push(values.map((v, i) => v + (k ? running[k - 1][i] : 0))));
  // Topmost first: each later (lower) band is painted over the one above it.
  const order = names.map((_, k) => names.length - 1 - k);
  const series = [{}, ...order.map((k) => ({
    label: names[k],
    stroke: COLORS[k % COLORS.length],
    fill: COLORS[k % COLORS.length],
    width: 1,
    points: { show: false },
    value: (u, v, s, i) => (i == null ? "–" : format(own[k][i])),
  }))];
  const data = [xs.map((x) => x / 1e6), ...order.map((k) => running[k])];
  draw(container, { series, axes: [{}, { values: (u, ticks) => ticks.map(tick), size: 80 }] }, data, pointsOf(xs, own));
}

// Lines from the API's per-bucket totals: `fields` are [label, (bucket) => value, color, what a
// bucket without requests shows (0, or null for a gap)].
export function lines(container, stats, fields, format) {
  const xs = buckets(stats);
  const index = new Map(xs.map((x, i) => [x, i]));
  const values = fields.map(([, , , missing]) => new Array(xs.length).fill(missing ?? null));
  for (const bucket of stats.buckets) {
    const i = index.get(bucket.start_us);
    if (i === undefined) continue;
    fields.forEach(([, get], k) => { values[k][i] = get(bucket); });
  }
  const series = [{}, ...fields.map(([label, , color]) => ({
    label, stroke: color, width: 2, spanGaps: false,
    points: { show: true, size: 4 },
    value: (u, v) => (v == null ? "–" : format(v)),
  }))];
  draw(container, { series, axes: [{}, { values: (u, ticks) => ticks.map(format), size: 70 }] }, [xs.map((x) => x / 1e6), ...values], pointsOf(xs, values));
}

export function resize() {
  for (const [id, chart] of charts) {
    const container = document.getElementById(id);
    if (container) chart.setSize(size(container));
  }
}
