"""The Typer application and the one place where errors become exit codes.

Exit codes: 0 ok; 1 error (bad config, profile or input; one ``Error:`` line on stderr);
2 usage error (unknown option, bad option value); 3 the model does not fit (only with ``--require-fit``).
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any

import typer
from typer.core import TyperGroup

try:  # typer >= 0.22 vendors its own click: catch both its exceptions and click's
    from typer import exceptions as _typer_exc
    from typer._click import exceptions as _typer_click_exc

    _EXIT = (_typer_exc.Exit,)
    _ABORT = (_typer_exc.Abort,)
    _USAGE = (_typer_click_exc.UsageError,)
    _CLICK = (_typer_click_exc.ClickException,)
    _NO_ARGS = tuple(c for c in (getattr(_typer_click_exc, "NoArgsIsHelpError", None),) if c)
except ImportError:  # pragma: no cover
    _EXIT, _ABORT, _USAGE, _CLICK, _NO_ARGS = (), (), (), (), ()
if "click" in sys.modules:  # an older typer built on click itself
    import click.exceptions as _click_exc

    _EXIT += (_click_exc.Exit,)
    _ABORT += (_click_exc.Abort,)
    _USAGE += (_click_exc.UsageError,)
    _CLICK += (_click_exc.ClickException,)
    _NO_ARGS += tuple(c for c in (getattr(_click_exc, "NoArgsIsHelpError", None),) if c)

from planner.analysis.errors import PlannerError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_NO_FIT = 3
EXIT_OUTPUT = -1  # (inside main only: stdout failed; exits EXIT_ERROR once stdout is set aside)

_DEBUG = {"on": bool(os.environ.get("PLANNER_DEBUG"))}


_LONGEST_WORD = 240  # characters of one word (a path, a name, an option value) an Error line shows whole
_LONGEST_LINE = 8000  # characters of the whole line


def _one_line(text: str) -> str:
    """``text`` on one line, bounded: a word longer than ``_LONGEST_WORD`` (a 5,000-character model name or
    path echoed back) keeps its head and tail, and the line stops at ``_LONGEST_LINE`` characters. Messages
    bound the values they format (``analysis.errors.short``); this is the last guard for those that do not."""
    from .render import visible

    words = [visible(w) for w in str(text).split()]
    words = [w if len(w) <= _LONGEST_WORD else f"{w[:100]}...{w[-100:]}" for w in words]
    line = " ".join(words)
    if len(line) > _LONGEST_LINE:
        line = f"{line[:_LONGEST_LINE]}... ({len(line) - _LONGEST_LINE:,} more characters)"
    return line


def _error(message: str) -> None:
    sys.stderr.write(f"Error: {_one_line(message)}\n")
    sys.stderr.flush()


class _Lazy:
    """What ``planner --help`` needs of a command (name and help line) before its module is imported."""

    hidden = False
    deprecated = False
    short_help = None
    rich_help_panel = None

    def __init__(self, entry: Any) -> None:
        self.entry, self.name, self.help = entry, entry.name, entry.help

    def get_short_help_str(self, limit: int = 45) -> str:
        """What click lists beside the command's name (as ``click.Command`` makes it from the help)."""
        try:
            from typer._click.utils import make_default_short_help
        except ImportError:  # pragma: no cover  (an older typer on click itself)
            from click.utils import make_default_short_help
        return make_default_short_help(self.help, limit)


def _tolerant_streams() -> None:
    """An output encoding that cannot hold the tables' characters (``PYTHONIOENCODING=ascii``, a C
    locale) gets '?' for them instead of a UnicodeEncodeError after half a table."""
    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None) or "utf-8"
        try:
            "×┃µ".encode(encoding)
        except (UnicodeEncodeError, LookupError):
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                try:
                    reconfigure(errors="replace")
                except (ValueError, OSError):
                    pass


class OutputError(PlannerError):
    """Standard output cannot take the result (closed, a full disk, an I/O error)."""


class _GuardedStdout:
    """``sys.stdout`` for the length of one command: a write or flush that fails (``> /dev/full``: ENOSPC)
    becomes an ``OutputError`` instead of an internal error; a broken pipe stays a ``BrokenPipeError``.
    Everything else is the wrapped stream's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _guard(self, method: str, *args: Any) -> Any:
        try:
            return getattr(self._stream, method)(*args)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(f"cannot write the result to standard output: {exc.strerror or exc}") from None

    def write(self, text: Any) -> Any:
        return self._guard("write", text)

    def writelines(self, lines: Any) -> Any:
        return self._guard("writelines", lines)

    def flush(self) -> Any:
        return self._guard("flush")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _QuietStderr(_GuardedStdout):
    """``sys.stderr`` whose failed writes (``2> /dev/full``) are dropped: a warning that cannot be shown must
    not cost the result on stdout, and an error that cannot be shown still sets the exit code."""

    def _guard(self, method: str, *args: Any) -> Any:
        try:
            return getattr(self._stream, method)(*args)
        except (OSError, ValueError):  # (ValueError: a closed file)
            return None


def _drop_stdout(stream: Any) -> None:
    """After a failed write to the process's own stdout, point its descriptor at /dev/null, so the interpreter's
    flush at exit does not fail again with an 'Exception ignored' report on stderr."""
    if stream is not sys.__stdout__:  # (a test runner's stream: nothing to close)
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):
        pass


class PlannerGroup(TyperGroup):
    """Runs click in non-standalone mode and maps every failure to one ``Error:`` line. Commands are
    registered lazily (``commands.COMMANDS``): listed by name and help line, imported when run."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from .commands import COMMANDS

        for entry in COMMANDS:
            self.commands.setdefault(entry.name, _Lazy(entry))  # type: ignore[arg-type]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        cmd = self.commands.get(cmd_name)
        if isinstance(cmd, _Lazy) and not getattr(ctx, "_planner_listing", False):
            from .commands import load

            cmd = self.commands[cmd_name] = load(cmd.entry)
        return cmd

    def format_help(self, ctx: Any, formatter: Any) -> None:
        ctx._planner_listing = True  # the command list shows help lines without importing commands
        try:
            super().format_help(ctx, formatter)
        finally:
            ctx._planner_listing = False

    def invoke(self, ctx: Any) -> Any:
        # typer turns Ctrl-C into a silent exit 130 before main() sees it: say what happened
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            _error("interrupted")
            raise typer.Exit(130) from None

    def main(self, args: Any = None, prog_name: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        out, err = sys.stdout, sys.stderr
        sys.stderr = _QuietStderr(err if err is not None else open(os.devnull, "w"))  # (None: 2>&- closed it)
        try:
            if out is None:  # 'planner ... >&-': Python leaves sys.stdout None, and the result went nowhere
                _error("standard output is closed: the result has nowhere to go (run without '>&-', or redirect "
                       "it to a file)")
                code = EXIT_ERROR
            else:
                sys.stdout = _GuardedStdout(out)
                _tolerant_streams()
                code = self._run(args, prog_name, extra)
                if code == EXIT_OUTPUT:
                    _drop_stdout(out)
                    code = EXIT_ERROR
        finally:
            sys.stdout, sys.stderr = out, err
        if standalone_mode:
            sys.exit(code)
        return code

    def _run(self, args: Any, prog_name: str | None, extra: dict) -> int:
        code = EXIT_OK
        try:
            rv = super().main(args=args, prog_name=prog_name or "planner", standalone_mode=False, **extra)
            if isinstance(rv, int):  # click returns an exit code from ctx.exit()/--help
                code = rv
        except _EXIT as exc:
            code = exc.exit_code
        except _ABORT:
            _error("aborted")
            code = 130
        except _NO_ARGS as exc:  # a group run without its command: the help, then one Error line
            text = exc.format_message()
            if text.strip():  # plain help text (rich help has already been printed)
                sys.stdout.write(text.rstrip("\n") + "\n")
            _error(f"missing command (see '{exc.ctx.command_path} --help')")
            code = EXIT_USAGE
        except _USAGE as exc:
            msg = exc.format_message()
            if exc.ctx is not None:
                msg += f" (see '{exc.ctx.command_path} --help')"
            _error(msg)
            code = EXIT_USAGE
        except _CLICK as exc:
            _error(exc.format_message())
            code = exc.exit_code or EXIT_ERROR
        except OutputError as exc:
            _error(str(exc))
            code = EXIT_OUTPUT
        except PlannerError as exc:
            if _DEBUG["on"]:
                traceback.print_exc()
            _error(str(exc))
            code = exc.exit_code
        except KeyboardInterrupt:
            _error("interrupted")
            code = 130
        except BrokenPipeError:
            code = EXIT_OUTPUT  # silent, as a reader that stopped early (| head) expects
        except Exception as exc:  # a bug: still one line, the traceback only with --debug
            if _DEBUG["on"]:
                traceback.print_exc()
            _error(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback and please report it)")
            code = EXIT_ERROR
        if code != EXIT_OUTPUT:  # a result still buffered fails here, while its error can be told
            try:
                sys.stdout.flush()
            except OutputError as exc:
                _error(str(exc))
                code = EXIT_OUTPUT
            except BrokenPipeError:
                code = EXIT_OUTPUT
        return code


app = typer.Typer(
    cls=PlannerGroup,
    name="planner",
    help=(
        "Capacity planner and config analyzer for transformer LLMs: parameters, FLOPs, KV cache, "
        "memory, a per-op roofline trace of a decode step, model comparison, and verification "
        "against a real torch decode loop.\n\n"
        "Exit codes: 0 ok, 1 error, 2 usage error, 3 does not fit (with --require-fit).\n\n"
        "Example: planner analyze llama-3.1-8b --context 8192 --hardware h100-sxm"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # click's plain help: Typer's Rich help imports rich.markdown, markdown-it and pygments, which
    # doubles the start-up of --help (bench/startup.py)
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120},
)


def _version_callback(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("planner")
        except PackageNotFoundError:
            v = "unknown"
        typer.echo(f"planner {v}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show the Python traceback of an error."),
    version: bool = typer.Option(False, "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."),
) -> None:
    if debug:
        _DEBUG["on"] = True


def main() -> None:
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
