// How numbers and times are shown, and CSV cells written.

const integer = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

export function count(n) {
  return n == null ? "–" : integer.format(n);
}

// USD with enough digits that a small spend is not shown as 0.00.
export function usd(v) {
  if (v == null) return "–";
  const digits = v !== 0 && Math.abs(v) < 1 ? 6 : 2;
  return "$" + v.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export function percent(rate) {
  return rate == null ? "–" : (rate * 100).toFixed(2) + "%";
}

// µs shown in ms.
export function ms(us) {
  return us == null ? "–" : (us / 1000).toLocaleString("en-US", { maximumFractionDigits: 1 }) + " ms";
}

export function utc(us) {
  return new Date(Math.floor(us / 1000)).toISOString().replace("T", " ").replace(/\.\d+Z$/, "");
}

// One CSV cell: quoted, quotes doubled, and a cell a spreadsheet would read as a formula
// (=, +, -, @, or a tab or carriage return first) prefixed with a quote.
export function csvCell(value) {
  let text = value == null ? "" : String(value);
  if (typeof value === "string" && /^[=+\-@\t\r]/.test(text)) text = "'" + text;
  return '"' + text.replace(/"/g, '""') + '"';
}

export function csv(rows) {
  return rows.map((row) => row.map(csvCell).join(",")).join("\r\n") + "\r\n";
}

// An element with text (never HTML).
export function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text != null) node.textContent = text;
  if (className) node.className = className;
  return node;
}

const HOUR = 3_600_000_000;
const DAY = 24 * HOUR;
// Each range the page offers: its length in µs and the bucket its charts use.
const RANGES = {
  "1h": [HOUR, "minute"],
  "6h": [6 * HOUR, "minute"],
  "24h": [DAY, "hour"],
  "7d": [7 * DAY, "hour"],
  "30d": [30 * DAY, "day"],
  "90d": [90 * DAY, "day"],
};

// The range named `name` ending now, in µs, with the bucket of its charts.
export function rangeOf(name) {
  const [length, bucket] = RANGES[name] ?? RANGES["24h"];
  const end = Date.now() * 1000;
  return { start: end - length, end, length, bucket };
}
