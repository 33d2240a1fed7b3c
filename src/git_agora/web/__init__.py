"""The static site's pages: value objects in (`model`), HTML out (`pages`), with the shared script and
style sheet in `static/`. Pure rendering: no Git, no index, no disk; `git_agora.ops.site` gathers the
data through the library and writes the files."""
