"""Every way mpsgen shows a result, in one place. Library modules return data; `mpsgen.cli` picks
a renderer by `--format` / `--json` / `--markdown` and the output stream (`mode`):

- `mode`: auto/rich/plain/github, NO_COLOR, the rich Console; `text`: aligned plain-text tables;
- `summary`: the new-op/migrate plan summary (rich on a terminal, plain lines elsewhere);
- `verify_table` (rich), `verify_text` (plain lines), `github` (workflow commands), `verify_json`,
  `junit`: `mpsgen verify`;
- `scan_table` (rich), `scan_text` (plain), `scan_json`, `scan_markdown`, with the rows they share in
  `scan_rows`: `mpsgen scan`;
- `trace_table` (rich), `trace_text` (plain and Markdown), `trace_json`, with the rows and lines they
  share in `trace_rows`: `mpsgen trace`.

Modules are imported by the command that needs them, so that `mpsgen --help` stays fast."""
