// The results table: one line per figure, with its target and PASS/FAIL (or "info").

export interface Line {
  /** A section heading instead of a figure. */
  section?: string;
  name?: string;
  value?: string;
  target?: string;
  /** undefined: informational, no target. */
  pass?: boolean;
}

export function renderTable(lines: Line[]): string {
  const rows = lines.map((l) =>
    l.section !== undefined
      ? { section: l.section }
      : { cells: [l.name ?? '', l.value ?? '', l.target ?? '', l.pass === undefined ? 'info' : l.pass ? 'PASS' : 'FAIL'] },
  );
  const header = ['measurement', 'result', 'target', 'verdict'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => ('cells' in r ? r.cells![i]!.length : 0))));
  const total = widths.reduce((a, b) => a + b, 0) + 3 * (widths.length - 1);
  const format = (cells: string[]) =>
    cells
      .map((c, i) => (i === 1 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join(' │ ')
      .trimEnd();
  const rule = widths.map((w) => '─'.repeat(w)).join('─┼─');
  const out = [format(header), rule];
  for (const r of rows) {
    if ('section' in r) out.push(`${r.section} ${'·'.repeat(Math.max(0, total - r.section!.length - 1))}`);
    else out.push(format(r.cells!));
  }
  return out.join('\n');
}
