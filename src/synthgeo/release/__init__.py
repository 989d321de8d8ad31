"""A release: the writer, the release record and its schema, the report, the data users' README."""
