"""Git I/O: ref layout, canonical commits, account logs, push and fetch."""
