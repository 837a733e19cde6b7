// Breakdown tables: sortable by any column, exported as CSV. Cells hold their raw value in
// `data-value` (what the usage API answered) and show it formatted.

import { count, csv, el, ms, percent, usd } from "./format.js";

const FIGURES = [
  { key: "requests", label: "Requests", show: count },
  { key: "errors", label: "Errors", show: count },
  { key: "error_rate", label: "Error rate", show: percent },
  { key: "input_tokens", label: "Input", show: count },
  { key: "output_tokens", label: "Output", show: count },
  { key: "cached_input_tokens", label: "Cached", show: count },
  { key: "cost", label: "Cost", show: usd },
  { key: "cache_hits", label: "Cache hits", show: count },
  { key: "saved_cost", label: "Saved", show: usd },
  { key: "latency_us_avg", label: "Avg latency", show: ms },
];

// What a request that never reached a provider (refused by a guard or a limit, or naming no
// model served here) shows in a provider column: the API answers its provider as "".
export const NO_PROVIDER = "(none: refused before routing)";
const PROVIDER = { key: "provider", label: "Provider", none: NO_PROVIDER };

// The key columns of each breakdown, as the API names them; `none` is shown for an absent value.
export const KEYS = {
  provider: [PROVIDER],
  model: [PROVIDER, { key: "model", label: "Model" }],
  user: [{ key: "user_id", label: "User" }],
  tag: [{ key: "tag", label: "Tag" }],
};

export class Breakdown {
  constructor(container, kind) {
    this.container = container;
    this.kind = kind;
    this.columns = [...KEYS[kind].map((c) => ({ ...c, text: true })), ...FIGURES];
    this.sort = { key: "cost", descending: true };
    this.answer = { rows: [], count: 0 };
  }

  show(answer) {
    this.answer = answer;
    this.render();
  }

  sorted() {
    const { key, descending } = this.sort;
    const rows = [...this.answer.rows];
    rows.sort((a, b) => {
      const x = a[key] ?? "", y = b[key] ?? "";
      const order = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
      return descending ? -order : order;
    });
    return rows;
  }

  render() {
    const table = el("table", null, "grid");
    table.dataset.breakdown = this.kind;
    const head = table.createTHead().insertRow();
    for (const column of this.columns) {
      const th = el("th", column.label, column.text ? "" : "num");
      th.dataset.key = column.key;
      if (column.key === this.sort.key) th.setAttribute("aria-sort", this.sort.descending ? "descending" : "ascending");
      th.addEventListener("click", () => {
        this.sort = { key: column.key, descending: this.sort.key === column.key ? !this.sort.descending : !column.text };
        this.render();
      });
      head.append(th);
    }
    const body = table.createTBody();
    for (const row of this.sorted()) {
      const tr = body.insertRow();
      for (const column of this.columns) {
        const value = row[column.key];
        const absent = value == null || value === "";
        const td = el("td", column.text ? (absent ? column.none ?? "(none)" : value) : column.show(value), column.text ? "" : "num");
        td.dataset.field = column.key;
        td.dataset.value = value == null ? "" : String(value);
        if (column.text) td.title = value ?? "";
        tr.append(td);
      }
    }
    const note = this.answer.count > this.answer.rows.length
      ? el("p", `The ${this.answer.rows.length} spending most of ${this.answer.count}.`, "muted")
      : null;
    this.container.replaceChildren(...(this.answer.rows.length ? [table] : [el("p", "No requests in this range.", "empty")]), ...(note ? [note] : []));
  }

  // The table as CSV, in its current order, raw values.
  csv() {
    const rows = [this.columns.map((c) => c.key)];
    for (const row of this.sorted()) rows.push(this.columns.map((c) => row[c.key]));
    return csv(rows);
  }

  download() {
    const blob = new Blob([this.csv()], { type: "text/csv;charset=utf-8" });
    const link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = `wasmgate-by-${this.kind}.csv`;
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 1000);
  }
}
