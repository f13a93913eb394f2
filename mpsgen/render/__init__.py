"""Every way mpsgen shows a result, in one place. Library modules return data; `mpsgen.cli` picks
one of these renderers:

- `summary`: the new-op/migrate plan summary;
- `verify_table`, `verify_json`, `junit`: `mpsgen verify` as a terminal table, JSON, JUnit XML;
- `scan_table`, `scan_json`, `scan_markdown` (rows shared through `scan_rows`): `mpsgen scan`.

Modules are imported by the command that needs them, so that `mpsgen --help` stays fast."""
