// The HTML report's style sheet and script, inline so the file works offline and alone. System
// fonts only: a report must not reach the network when it is opened.

extension HTMLReport {
  static let styleSheet = """
    :root {
      --dns: #0ca678; --connect: #f08c00; --tls: #ae3ec9; --wait: #37b24d; --transfer: #1c7ed6;
      --open: #dee2e6; --bad: #e03131; --warn: #e8590c; --text: #212529; --muted: #6c757d;
      --line: #e9ecef; --border: #ced4da; --panel: #f8f9fa; --grid: #f1f3f5; --hover: #edf4ff;
    }
    * { box-sizing: border-box; }
    body { margin: 0; color: var(--text); background: #fff;
      font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
    header { padding: 18px 32px 0; background: var(--panel); border-bottom: 1px solid var(--border); }
    h1 { margin: 0; font-size: 21px; font-weight: 650; }
    .facts { margin: 2px 0 10px; color: var(--muted); }
    nav { display: flex; gap: 22px; }
    nav a { color: var(--muted); text-decoration: none; padding: 6px 0 8px; border-bottom: 2px solid transparent; }
    nav a:hover { color: var(--text); border-bottom-color: var(--transfer); }
    main { padding: 8px 32px 48px; }
    .cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 16px 0 4px; }
    .card { flex: 1 1 130px; border: 1px solid var(--line); border-radius: 10px; padding: 10px 14px;
      box-shadow: 0 1px 2px rgba(0,0,0,.04); }
    .card .label { font-size: 11px; font-weight: 600; letter-spacing: .05em; text-transform: uppercase; color: var(--muted); }
    .card .value { font-size: 24px; font-weight: 650; font-variant-numeric: tabular-nums; }
    .card .detail { font-size: 12px; color: var(--muted); }
    .card.bad { border-color: #ffc9c9; background: #fff5f5; }
    .card.bad .value, .card .detail.bad { color: var(--bad); }
    h2 { margin: 28px 0 8px; font-size: 16px; font-weight: 650; }
    h2 .note { margin-left: 8px; font-size: 12px; font-weight: 400; color: var(--muted); }
    table { width: 100%; border-collapse: collapse; font-variant-numeric: tabular-nums; }
    th, td { padding: 4px 10px; text-align: left; white-space: nowrap; border-bottom: 1px solid var(--line); }
    th { position: sticky; top: 0; z-index: 1; background: #fff; font-size: 11px; font-weight: 600;
      letter-spacing: .04em; text-transform: uppercase; color: var(--muted); border-bottom: 1px solid var(--border); }
    .num { text-align: right; }
    table:not(.waterfall) .num { padding-left: 28px; }
    #hosts, #endpoints, #dns, #request-failures, #failures { width: auto; min-width: 66%; }
    tbody tr:hover td { background: var(--hover); }
    .host, .note, .empty, .more { color: var(--muted); }
    .bad, .status.bad { color: var(--bad); font-weight: 600; }
    .status.warn { color: var(--warn); }
    .waterfall { table-layout: fixed; font-size: 13px; }
    .waterfall col.number { width: 3.5em; } .waterfall col.method { width: 5.5em; }
    .waterfall col.status { width: 4.5em; } .waterfall col.target { width: 30%; }
    .waterfall col.size, .waterfall col.time { width: 6.5em; } .waterfall col.timeline { width: 40%; }
    .waterfall col.kind { width: 7.5em; } .waterfall col.process { width: 9em; } .waterfall col.result { width: 24%; }
    .others col.timeline { width: 32%; }
    .waterfall td { overflow: hidden; text-overflow: ellipsis; }
    .waterfall th.sortable { cursor: pointer; user-select: none; }
    .waterfall th[aria-sort="ascending"]::after { content: " ▲"; }
    .waterfall th[aria-sort="descending"]::after { content: " ▼"; }
    tr.failed td.target { color: var(--bad); }
    td.timeline, th.timeline { padding: 0 10px; }
    .axis { position: relative; height: 16px; }
    .tick { position: absolute; top: 1px; padding-left: 4px; border-left: 1px solid var(--border);
      font-weight: 400; text-transform: none; letter-spacing: 0; }
    .track { position: relative; height: 20px;
      background: repeating-linear-gradient(to right, var(--grid) 0 1px, transparent 1px var(--tick)); }
    .phase { position: absolute; top: 5px; height: 10px; min-width: 1px; pointer-events: none; }
    .phase.dns { background: var(--dns); } .phase.connect { background: var(--connect); }
    .phase.tls { background: var(--tls); } .phase.wait { background: var(--wait); }
    .phase.transfer { background: var(--transfer); } .phase.open { background: var(--open); }
    tr.failed .phase.open { background: #ffc9c9; }
    .toolbar { display: flex; flex-wrap: wrap; align-items: center; gap: 16px; margin-bottom: 8px; }
    .toolbar input[type=search] { width: 320px; padding: 5px 10px; font: inherit;
      border: 1px solid var(--border); border-radius: 6px; }
    #shown-count { color: var(--muted); }
    .legend { margin-left: auto; color: var(--muted); }
    .swatch { display: inline-block; width: 11px; height: 11px; margin: 0 5px 0 12px; vertical-align: -1px; border-radius: 2px; }
    .swatch.dns { background: var(--dns); } .swatch.connect { background: var(--connect); }
    .swatch.tls { background: var(--tls); } .swatch.wait { background: var(--wait); }
    .swatch.transfer { background: var(--transfer); }
    """

  /// Filtering (text, errors only) and sorting of the waterfall rows; `#shown-count` says how many
  /// rows are visible. The page reads the same without it.
  static let script = """
    (() => {
      const table = document.getElementById("waterfall");
      if (!table) return;
      const body = table.tBodies[0];
      const rows = Array.from(body.rows);
      const filter = document.getElementById("filter");
      const errorsOnly = document.getElementById("errors-only");
      const shown = document.getElementById("shown-count");
      function applyFilter() {
        const words = filter.value.trim().toLowerCase().split(/\\s+/).filter(Boolean);
        let count = 0;
        for (const row of rows) {
          const text = row.textContent.toLowerCase();
          const visible = words.every(word => text.includes(word)) && (!errorsOnly.checked || row.classList.contains("failed"));
          row.hidden = !visible;
          if (visible) count++;
        }
        shown.textContent = count + " of " + rows.length + " requests";
      }
      filter.addEventListener("input", applyFilter);
      errorsOnly.addEventListener("change", applyFilter);
      const headings = Array.from(table.querySelectorAll("th[data-sort]"));
      for (const heading of headings) {
        heading.addEventListener("click", () => {
          const key = heading.dataset.sort;
          const ascending = heading.getAttribute("aria-sort") === "descending" || (key === "start" && !heading.hasAttribute("aria-sort"));
          headings.forEach(other => other.removeAttribute("aria-sort"));
          heading.setAttribute("aria-sort", ascending ? "ascending" : "descending");
          const sign = ascending ? 1 : -1;
          rows.slice().sort((a, b) => sign * (Number(a.dataset[key]) - Number(b.dataset[key])) || a.dataset.start - b.dataset.start)
            .forEach(row => body.appendChild(row));
        });
      }
      applyFilter();
    })();
    """
}
