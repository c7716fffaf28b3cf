"""Portable bundles (SPEC §15): one agent — declarations, revisions, memories, decisions,
stored compositions, deliveries and its audit events — in one file that another team or
instance imports exactly (``exporting``, ``importing``; the file's format is
``memory.core.bundle_format``)."""
