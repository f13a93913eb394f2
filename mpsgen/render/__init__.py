"""Every way mpsgen shows a result, in one place: library code returns data, and `mpsgen.cli` picks a
renderer by `--format` / `--json` / `--markdown` and the output stream (`mode`: auto/rich/plain/github,
NO_COLOR, the rich Console; `text`: aligned plain-text tables). `summary` shows a new-op/migrate plan;
`verify_table`, `verify_text`, `github`, `verify_json` and `junit` show `mpsgen verify`; `scan_table`,
`scan_text`, `scan_json` and `scan_markdown` (rows shared in `scan_rows`) show `mpsgen scan`;
`try_table` and `try_text` show `mpsgen try`; `trace_table`, `trace_text` and `trace_json` (rows
shared in `trace_rows`) show `mpsgen trace`. Each module is imported by the command that needs it,
so that `mpsgen --help` stays fast."""
