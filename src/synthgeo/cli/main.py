"""Command line: ``synthgeo <command> ...`` and ``synthgeo --version``.

Thin layer over the public API; with the other modules of :mod:`synthgeo.cli` the only code
that prints. Subcommands live one per module in :mod:`synthgeo.cli`; :mod:`synthgeo.cli.registry`
lists them.
"""

from __future__ import annotations

import argparse
import logging
import sys
import warnings
from importlib import import_module

from synthgeo._errors import SynthgeoError
from synthgeo._gc import fewer_full_collections, no_collection_at_exit
from synthgeo.cli.registry import COMMANDS

__all__ = ["main", "progress_enabled", "PROGRESS_CHOICES"]


def _one_line(message: object) -> str:
    """Collapse a message to one line (the CLI's error contract: one line on stderr)."""
    return " ".join(str(message).split())


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors as one ``synthgeo: error:`` line (exit code 2)."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"synthgeo: error: {_one_line(message)} (see `{self.prog} --help`)\n")


#: Values of ``--progress``.
PROGRESS_CHOICES = ("auto", "always", "never")

_HELP = {
    "verbose": "log details and show tracebacks of errors (default: off: one-line errors)",
    "quiet": "print only errors, warnings and the output paths; no progress bars unless "
             "--progress always (default: off)",
    "progress": "progress bars on stderr for sampling, effect recovery, synthesis, risk, "
                "utility and the report: auto = when stderr is a terminal and not --quiet; "
                "always; never (default: auto)",
}


def progress_enabled(progress: str, *, quiet: bool, stderr_tty: bool) -> bool:
    """Whether to draw progress bars: ``--progress`` always/never, else a TTY and not quiet.

    Parameters
    ----------
    progress : {"auto", "always", "never"}
    quiet : bool
        ``--quiet`` given.
    stderr_tty : bool
        Standard error is a terminal.

    Returns
    -------
    bool
    """
    if progress == "always":
        return True
    if progress == "never":
        return False
    return stderr_tty and not quiet


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="synthgeo",
        description="Partially synthetic geocoded public-use files with differential smoothing.",
    )
    p.add_argument("--version", action="store_true",
                   help="print synthgeo's and its main dependencies' versions and exit "
                        "(default: off)")
    # the same flags before and after the subcommand (SUPPRESS keeps the top-level value when
    # the flag is not repeated after it)
    common = _Parser(add_help=False)
    for parser, default in ((p, None), (common, argparse.SUPPRESS)):
        kw = {} if default is None else {"default": default}
        parser.add_argument("--verbose", action="store_true", **kw,
                            help=_HELP["verbose"])
        parser.add_argument("--quiet", action="store_true", **kw, help=_HELP["quiet"])
        parser.add_argument("--progress", choices=PROGRESS_CHOICES,
                            **({"default": "auto"} if default is None else kw),
                            help=_HELP["progress"])
    sub = p.add_subparsers(dest="command")
    for name in COMMANDS:
        import_module(f"synthgeo.cli.{name}").add_parser(sub, common)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``synthgeo`` command; returns the exit code.

    0 on success, 1 on bad input or a failed release (one ``synthgeo: error:`` line on
    stderr), 2 on a command-line usage error, 130 when interrupted.
    """
    # full collections are rarer while it runs (synthgeo._gc); the collector's thresholds,
    # the warning filters and the one-line display are restored on return (main may run
    # in-process); as the program (argv from the command line), no collection at exit
    if argv is None:
        no_collection_at_exit()
    with fewer_full_collections():
        try:
            args = _parser().parse_args(argv)
        except SystemExit as exc:  # --help, or a usage error already printed as one line
            return exc.code if isinstance(exc.code, int) else 2
        with warnings.catch_warnings():
            try:
                return _main(args)
            except BrokenPipeError:  # e.g. `synthgeo --version | head -1`
                sys.stderr.close()
                return 0


def _say(message: str) -> None:
    """Print a progress or summary line; a closed pipe (``| head``) silences, not aborts."""
    try:
        print(message, flush=True)
    except BrokenPipeError:
        import os

        # the reader has gone: send the rest of stdout to /dev/null and let the job finish
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _sigterm(signum, frame):  # noqa: ARG001
    # turn SIGTERM into KeyboardInterrupt so that write_release removes its temporary folder
    raise KeyboardInterrupt


def _main(args: argparse.Namespace) -> int:
    import signal

    try:
        signal.signal(signal.SIGTERM, _sigterm)
    except ValueError:  # not the main thread (e.g. called from a worker): leave it
        pass
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    if not args.verbose:
        warnings.filterwarnings("ignore", category=FutureWarning)
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        # arviz logs notes to stderr through its own handler (e.g. R-hat of one chain)
        for name in ("pymc", "arviz"):
            logging.getLogger(name).setLevel(logging.ERROR)
    say = (lambda m: None) if args.quiet else _say
    from synthgeo._progress import stderr_is_tty

    args.progressbar = progress_enabled(args.progress, quiet=args.quiet,
                                        stderr_tty=stderr_is_tty())
    if not args.verbose:
        # warnings (duplicates, convergence under "warn") as one line each, no source echo
        warnings.showwarning = lambda message, category, *a, **k: print(
            f"synthgeo: warning: {_one_line(message)}", file=sys.stderr, flush=True
        )
    if args.version:
        from synthgeo.api import show_versions

        show_versions()
        return 0
    if args.command is None:
        _parser().print_help()
        return 2
    from synthgeo._allocator import keep_freed_memory

    keep_freed_memory()  # N x N work arrays reused, not faulted in again (synthgeo._allocator)
    try:
        return import_module(f"synthgeo.cli.{args.command.replace('-', '_')}").run(args, say)
    except (SynthgeoError, ValueError, TypeError, OSError) as exc:
        if args.verbose:
            raise
        print(f"synthgeo: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("synthgeo: interrupted; nothing was written", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug, not bad input: still one line; --verbose shows it
        if args.verbose:
            raise
        print(f"synthgeo: error: unexpected {type(exc).__name__}: {_one_line(exc)} (rerun "
              "with --verbose for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
