"""The ``synthgeo`` command line: one module per subcommand (see :mod:`synthgeo.cli.registry`)."""
