"""A release: the writer, the release record and its schema, the report and the data users' README."""
