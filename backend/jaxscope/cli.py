"""The ``jaxscope`` command: ``serve`` the explorer, ``watch`` a file (serve, open the page on
it, rerun it on every save: design 0036), ``run`` an exhibit headless, or serve the hosted worker
``pool`` on a Unix socket (docker-compose: ``serve --pool-socket`` relays to it).

``jaxscope run EXHIBIT FILE`` goes through the same sandbox as the server (a worker pool and a
session, in this process's event loop; no server needed). Output: a short summary by default,
``--json`` every event as one JSON line, ``--print ARTEFACT`` that artefact's text alone (e.g.
``--print jaxpr`` is ``str(jax.make_jaxpr(f, static_argnums=...)(*args))`` plus a newline;
``--format json|text`` converts it: ``jaxscope.cli_format``). The
exit status is 1 when the run fails (kind, JAX's error class and message, and ``line N`` go to
stderr), 2 on a usage error (among them a FILE that is not UTF-8, or longer than
``MAX_CODE_CHARS`` characters: it is read no further than that), and 3 when the run finished but
what the exhibit shows is an error JAX raised on the user's code (the carry check of a
``lax.scan``, a rejected transform stack, ``jax.jit(jax.grad(f))``...: ``exhibits/shown.py``; one
stderr line per error, the artefact is still printed) or a problem it found (a finding: a
gradient that disagrees with the finite differences, a Pallas output race, a host-to-device
copy in every training step). Limits come from ``JAXSCOPE_*`` variables
and the flags.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import io
import json
import math
import os
import shutil
import signal
import sys
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, TextIO, get_args, get_origin

from exhibits.registry import EXHIBITS, Exhibit
from jaxscope.cli_format import FORMATS, formatted
from jaxscope.settings import Limits, Settings, settings_from_env

# Neither pydantic, the protocol nor asyncio at import: ``jaxscope serve`` (and ``run`` of a JAX
# exhibit) starts the JAX workers' template before it imports them (``_prestart_template``,
# issue 36); a command imports what it uses.
if TYPE_CHECKING:
    import asyncio

    from exhibits.shown import ShownError
    from jaxscope.protocol import EventModel, RunFailed, RunOptions
    from jaxscope.server.watch import WatchedFile

EXIT_FAILED = 1
EXIT_USAGE = 2
# The run finished, but the exhibit shows an error JAX raised on the user's code.
EXIT_JAX_ERROR_SHOWN = 3


def port_number(text: str) -> int:
    """A TCP port for ``--port``: 0 (any free one) to 65535 (argparse's type; a larger number
    would wrap modulo 65536 in the socket call and serve on another port)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port: use 0 (any free port) to 65535")
    return port


def _seconds(text: str) -> float:
    """A limit in seconds: a finite number above 0 (``--timeout -5`` or ``nan`` is a usage
    error, not a run killed at once, and ``inf`` would be no limit at all)."""
    value = _number(text)
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, not {text!r}")
    return value


def _gib(text: str) -> float:
    """An address-space limit in GiB: a finite number, 0 for none."""
    value = _number(text)
    if not 0 <= value < math.inf:
        raise argparse.ArgumentTypeError(f"must be 0 (no limit) or a number of GiB, not {text!r}")
    return value


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def _limit_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cpu", type=_seconds, default=None, metavar="S", help="CPU seconds per run"
    )
    parser.add_argument(
        "--memory-gib",
        type=_gib,
        default=None,
        metavar="G",
        help="address-space limit of a worker in GiB (0 = none)",
    )


def _sandbox_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="run user code WITHOUT bubblewrap's namespaces (no network, pid or file-system "
        "isolation; only the rlimits and the audit hook remain): only where the kernel forbids "
        "namespaces, and only for code you trust (JAXSCOPE_NAMESPACES=0)",
    )


def sandbox_refusal(limits: Limits) -> str | None:
    """Why a command must not start: workers need namespaces (``limits.namespaces``) that this
    machine cannot make; None when they work or were explicitly turned off."""
    from jaxscope.sandbox.namespaces import sandbox_problem

    if not limits.namespaces:
        return None
    why = sandbox_problem()
    return None if why is None else f"jaxscope: cannot start: {why}"


def _max_workers_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-workers",
        type=int,
        default=None,
        metavar="N",
        help="most sandbox workers at once, i.e. runs at once (default: what this machine "
        "holds, 4 per core within memory; JAXSCOPE_MAX_WORKERS); further runs wait in a queue",
    )


def _limits(base: Limits, ns: argparse.Namespace, wall: float | None) -> Limits:
    changes: dict[str, float | int] = {}
    if wall is not None:
        changes["wall_s"] = wall
    if ns.cpu is not None:
        changes["cpu_s"] = ns.cpu
    if ns.memory_gib is not None:
        changes["address_space_bytes"] = int(ns.memory_gib * 2**30)
    if getattr(ns, "unsafe_no_sandbox", False):
        changes["namespaces"] = False
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def build_parser(*, run_options: bool = True) -> argparse.ArgumentParser:
    """The ``jaxscope`` command line. ``run_options=False`` leaves out the flags of the exhibits'
    options (:func:`_option_flags`) from ``run`` and ``diff``, so that the parser imports
    neither pydantic nor the protocol: :func:`main` parses ``serve`` and ``watch`` with it."""
    parser = argparse.ArgumentParser(
        prog="jaxscope", description="A visual explorer and debugger of JAX internals."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve the explorer (FastAPI + the built frontend)")
    serve.add_argument("--host", default=None, help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=port_number, default=None, help="port (default 8000)")
    serve.add_argument(
        "--token",
        default=None,
        help="access token (generated for a non-loopback host); visible to every local process "
        "in /proc/PID/cmdline: prefer the JAXSCOPE_TOKEN environment variable",
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=None,
        help="warm idle workers (default: one per core, at most 8)",
    )
    _max_workers_flag(serve)
    serve.add_argument(
        "--timeout", type=_seconds, default=None, metavar="S", help="wall-clock seconds per run"
    )
    serve.add_argument(
        "--pool-socket",
        type=Path,
        default=None,
        metavar="PATH",
        help="relay sessions to the hosted pool on this Unix socket (see `jaxscope pool`)",
    )
    serve.add_argument(
        "--queue",
        default=None,
        metavar="URL",
        help="put runs on the run queue at redis://HOST:PORT/DB for the pool hosts on it "
        "(`jaxscope pool --queue`; design 0065); the password in JAXSCOPE_QUEUE_PASSWORD",
    )
    serve.add_argument(
        "--forwarded-allow-ips",
        default=None,
        metavar="IPS",
        help="behind a proxy or load balancer: trust X-Forwarded-For/-Proto from these "
        "addresses or networks (comma-separated, * for any), so that each user is a client of "
        "their own for the per-client share (default: the socket's peer address; design 0065)",
    )
    _limit_flags(serve)
    _sandbox_flag(serve)

    watch = sub.add_parser(
        "watch",
        help="serve the explorer on FILE and rerun it on every save",
        description="Serve the explorer (as `jaxscope serve` on 127.0.0.1, with an access "
        "token: the URL it prints carries it; JAXSCOPE_TOKEN sets it) and open the page on FILE "
        "in EXHIBIT: the page follows the file, rerunning it each time it is saved, with the "
        "editor read-only until you press Stop following (designs 0036, 0052).",
    )
    watch.add_argument("file", type=Path, help="the snippet (a .py file defining f and args)")
    watch.add_argument(
        "--exhibit", required=True, metavar="ID", help=f"exhibit id ({', '.join(EXHIBITS)})"
    )
    watch.add_argument("--port", type=port_number, default=None, help="port (default 8000)")
    watch.add_argument(
        "--no-browser", action="store_true", help="print the page's URL, do not open a browser"
    )
    watch.add_argument(
        "--timeout", type=_seconds, default=None, metavar="S", help="wall-clock seconds per run"
    )
    _limit_flags(watch)
    _sandbox_flag(watch)
    # What `serve` takes and `watch` leaves at its default (loopback; the token is generated,
    # or JAXSCOPE_TOKEN's: a watched file is served only with one, design 0052).
    watch.set_defaults(
        host=None, token=None, workers=None, max_workers=None, pool_socket=None, queue=None
    )

    pool = sub.add_parser(
        "pool",
        help="serve sandbox sessions on a Unix socket, or take runs from a run queue (hosted)",
    )
    where = pool.add_mutually_exclusive_group()
    where.add_argument("--socket", type=Path, metavar="PATH")
    where.add_argument(
        "--queue",
        metavar="URL",
        help="take runs from the run queue at redis://HOST:PORT/DB (design 0065; default "
        "JAXSCOPE_QUEUE); the password in JAXSCOPE_QUEUE_PASSWORD",
    )
    pool.add_argument(
        "--lanes",
        default="light=2,heavy=1",
        metavar="LANE=N,...",
        help="with --queue: the lanes this host takes runs from and its workers for each "
        "(light, heavy, torch, accelerator; default light=2,heavy=1)",
    )
    pool.add_argument(
        "--per-client",
        type=int,
        default=2,
        metavar="N",
        help="with --queue: runs one client may have running on all hosts together (default 2; "
        "at most half a lane's workers on all hosts, at least 1)",
    )
    pool.add_argument(
        "--workers",
        type=int,
        default=None,
        help="warm idle workers (default: one per core, at most 8)",
    )
    _max_workers_flag(pool)
    pool.add_argument(
        "--timeout", type=_seconds, default=None, metavar="S", help="wall-clock seconds per run"
    )
    _limit_flags(pool)
    _sandbox_flag(pool)

    run = sub.add_parser(
        "run",
        help="run an exhibit on a snippet file, headless",
        description="Run an exhibit on a snippet file, headless. Exit status: 0 fine; 1 the run "
        "failed; 2 usage; 3 the run finished but JAX refused the code or the exhibit found a "
        "problem (said on stderr).",
        epilog=ARTEFACTS_EPILOG,
        formatter_class=_ArtefactsHelp,
    )
    run.add_argument("exhibit", help=f"exhibit id ({', '.join(EXHIBITS)})")
    run.add_argument(
        "file",
        type=Path,
        help="the snippet (a .py file defining f and args), or the name of an example as the "
        "exhibit's picker lists it (mlp_loss, real/gpt_stack); - reads it from stdin (an "
        "exhibit that needs no snippet, such as config, then reads nothing from a terminal)",
    )
    out = run.add_mutually_exclusive_group()
    out.add_argument("--print", dest="artefact", metavar="ARTEFACT", help="print one artefact")
    out.add_argument("--json", action="store_true", help="every event as one JSON line")
    run.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="with --print: json prints a JSON artefact as it is and a text one as "
        '{"exhibit": ID, "artefact": NAME, "text": TEXT}; text prints a text artefact as it is '
        "and a JSON one as readable text (key: value lines, a list of objects as a table); "
        "without it the artefact is printed as it is (design 0035)",
    )
    run.add_argument(
        "--html",
        type=Path,
        default=None,
        metavar="OUT",
        help="also write the run as one self-contained HTML file that replays it in a browser "
        "with no server (the frontend, every event, the stepper; design 0034)",
    )
    run.add_argument(
        "--timeout", type=_seconds, default=None, metavar="S", help="wall-clock seconds per run"
    )
    run.add_argument(
        "--device",
        choices=("accelerator", "cpu"),
        default=None,
        help="where a JAX exhibit runs on a host with an accelerator: accelerator (the chip, "
        "the default there; one run at a time) or cpu (the 8 virtual CPU devices; design 0069)",
    )
    if run_options:
        _option_flags(run)
    _limit_flags(run)
    _sandbox_flag(run)

    diff = sub.add_parser(
        "diff",
        help="one artefact of two versions of a snippet: a jaxpr structurally, else a unified diff",
        description="Run an exhibit on two snippet files and compare one artefact (jaxpr, "
        "stablehlo, ...). A jaxpr is compared structurally (eqns matched by primitive, params "
        "and types, not by variable names: the eqns that differ with their source lines, a "
        "count, the same eqns summarised); any other artefact, or any with --text, as a "
        "unified line diff. Exit status, as diff(1): 0 the same; 1 different; "
        "2 a usage error, or a run that failed or produced no such artefact.",
        epilog=ARTEFACTS_EPILOG,
        formatter_class=_ArtefactsHelp,
    )
    diff.add_argument("exhibit", help=f"exhibit id ({', '.join(EXHIBITS)})")
    diff.add_argument("a", type=Path, help="the first version of the snippet")
    diff.add_argument("b", type=Path, help="the second version")
    diff.add_argument(
        "--print", dest="artefact", metavar="ARTEFACT", required=True, help="the artefact"
    )
    diff.add_argument(
        "--text",
        action="store_true",
        help="a unified line diff of the texts, a jaxpr's too (renamed variables then differ)",
    )
    diff.add_argument(
        "--timeout", type=_seconds, default=None, metavar="S", help="wall-clock seconds per run"
    )
    if run_options:
        _option_flags(diff)
    _limit_flags(diff)
    _sandbox_flag(diff)

    install_torch = sub.add_parser(
        "install-torch",
        help="make the PyTorch/XLA exhibits' venv (torch + torch_xla, ~7 GB) with pip",
        description="Make the venv the PyTorch/XLA exhibits run in (torch 2.9.0 + torch_xla "
        "2.9.0 and torchax, about 7 GB, 2-3 minutes) where this jaxscope looks for it: "
        "$JAXSCOPE_TORCH_PYTHON's venv, else the checkout's .venv-torch, else (an installed "
        "wheel) $XDG_DATA_HOME/jaxscope/venv-torch (design 0057).",
    )
    install_torch.add_argument(
        "--dry-run", action="store_true", help="print the commands, run nothing"
    )
    return parser


# The epilog of ``run --help`` and ``diff --help``, written out by :class:`_ArtefactsHelp` only
# when help is printed: the table imports every exhibit's artefacts module (and its events).
ARTEFACTS_EPILOG = "artefacts (--print ARTEFACT), per exhibit:"


class _ArtefactsHelp(argparse.RawDescriptionHelpFormatter):
    """Help as written, with :data:`ARTEFACTS_EPILOG` replaced by :func:`_artefacts_epilog`."""

    def add_text(self, text: str | None) -> None:
        super().add_text(_artefacts_epilog() if text == ARTEFACTS_EPILOG else text)


def _artefacts_epilog() -> str:
    """What ``--print`` takes, per exhibit (every run can also print ``jaxpr`` where the exhibit
    stages one): the registry's artefact names, one line per exhibit."""
    lines = [ARTEFACTS_EPILOG]
    for exhibit in EXHIBITS.values():
        names = ", ".join(exhibit.artefacts) or "(none: use --json)"
        lines.append(f"  {exhibit.id:<16} {names}")
    return "\n".join(lines)


def _option_flags(run: argparse.ArgumentParser) -> None:
    """One flag per field of :class:`RunOptions` (``--in-axes``, ``--preset``, ``--steps``...),
    derived from the model: its description is the help, and the value is checked by the model
    itself (:func:`_run_options`), so that every control of every exhibit is reachable from the
    CLI without a copy of the model here. A list field takes JSON (``--known '[true, false]'``),
    except ``--stack``, which takes names separated by commas."""
    from jaxscope.protocol import RunOptions

    group = run.add_argument_group(
        "exhibit options (RunOptions; each applies to the exhibits it names)"
    )
    for name, field in RunOptions.model_fields.items():
        flag = "--" + name.replace("_", "-")
        if name == "stack":
            group.add_argument(
                flag,
                dest=f"opt_{name}",
                type=_stack_option,
                metavar="T1,T2",
                help=field.description,
            )
        elif name in ("calls", "known"):
            group.add_argument(
                flag, dest=f"opt_{name}", type=_json_option, metavar="JSON", help=field.description
            )
        elif name == "steps":
            group.add_argument(
                flag, dest=f"opt_{name}", type=int, metavar="N", help=field.description
            )
        elif choices := _literal_choices(field.annotation):
            # A closed set (``--target {host,tpu-v5e}``): --help lists it, argparse checks it.
            group.add_argument(flag, dest=f"opt_{name}", choices=choices, help=field.description)
        else:
            group.add_argument(
                flag,
                dest=f"opt_{name}",
                metavar="EXPR" if "expression" in (field.description or "") else "TEXT",
                help=field.description,
            )


def _literal_choices(annotation: object) -> list[str] | None:
    """The strings of a ``Literal[...]`` (or ``Literal[...] | None``) annotation, else None."""
    parts = [annotation] if get_origin(annotation) is Literal else list(get_args(annotation))
    for part in parts:
        if get_origin(part) is Literal:
            values = get_args(part)
            if all(isinstance(v, str) for v in values):
                return [str(v) for v in values]
    return None


def _json_option(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None


def _run_options(ns: argparse.Namespace) -> RunOptions:
    """The :class:`RunOptions` the flags ask for (flags not given keep the model's defaults);
    raises :class:`ValueError` with pydantic's own words for a value the model refuses."""
    from pydantic import ValidationError

    from jaxscope.protocol import RunOptions

    given = {
        name: getattr(ns, f"opt_{name}")
        for name in RunOptions.model_fields
        if getattr(ns, f"opt_{name}", None) is not None
    }
    try:
        return RunOptions(**given)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = "--" + str(first["loc"][0]).replace("_", "-") if first["loc"] else "options"
        raise ValueError(f"{where}: {first['msg']}") from None


def _options_elsewhere(ns: argparse.Namespace, exhibit: str) -> str | None:
    """Why the flags given do not apply to ``exhibit`` (each option is read by the exhibits its
    ``x-exhibits`` names), or None: a flag the exhibit would ignore is refused, not dropped."""
    from jaxscope.protocol import RunOptions, option_exhibits

    for name in RunOptions.model_fields:
        if getattr(ns, f"opt_{name}", None) is None:
            continue
        readers = option_exhibits(name)
        if exhibit not in readers:
            flag = "--" + name.replace("_", "-")
            return f"{flag} is an option of {' and '.join(readers)}, not of {exhibit}"
    return None


def _literal_names(annotation: object) -> tuple[str, ...]:
    """The values of every ``Literal`` inside ``annotation`` (``list[Literal["jit", ...]] |
    None``: the transform names of transform_order's ``stack``, read off the composed model)."""
    if get_origin(annotation) is Literal:
        return tuple(str(a) for a in get_args(annotation))
    return tuple(name for arg in get_args(annotation) for name in _literal_names(arg))


def _stack_option(text: str) -> list[str]:
    """``--stack vmap,grad`` -> ``["vmap", "grad"]`` (outermost first; ``""`` = no transform;
    an empty name between commas is an error, not silently dropped)."""
    if not text.strip():
        return []
    names = [t.strip() for t in text.split(",")]
    if "" in names:
        raise argparse.ArgumentTypeError(f"an empty transform name in {text!r}")
    from jaxscope.protocol import RunOptions

    valid = _literal_names(RunOptions.model_fields["stack"].annotation)
    bad = [n for n in names if n not in valid]
    if bad:
        raise argparse.ArgumentTypeError(
            f"unknown transform {', '.join(bad)}; valid: {', '.join(valid)}"
        )
    return names


def _watch(ns: argparse.Namespace) -> int:
    """``jaxscope watch FILE --exhibit ID``: :func:`_serve` with ``FILE`` watched."""
    if ns.exhibit not in EXHIBITS:
        print(
            f"jaxscope: unknown exhibit {ns.exhibit!r}; known: {', '.join(EXHIBITS)}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if not ns.file.is_file():
        print(f"jaxscope watch: {ns.file} is not a file", file=sys.stderr)
        return EXIT_USAGE
    _prestart_template(ns)
    from jaxscope.server.watch import WatchedFile

    return _serve(ns, WatchedFile(ns.file, ns.exhibit), open_browser=not ns.no_browser)


def _open_when_up(url: str, health: str) -> Path:
    """Open ``url`` in the user's browser once ``health`` answers (from a thread: uvicorn has
    the main one); give up quietly after 60 s. The browser is given a private page that
    redirects to ``url`` (``server/launch.py``), never ``url`` itself, whose token a browser's
    command line would show every local user; returns that page's folder, for the caller to
    remove."""
    import threading
    import time
    import urllib.request
    import webbrowser

    from jaxscope.server.launch import redirect_file

    page = redirect_file(url)

    def wait_then_open() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(health, timeout=1):
                    webbrowser.open(page.as_uri())
                    return
            except OSError:
                time.sleep(0.2)

    threading.Thread(target=wait_then_open, daemon=True).start()
    return page.parent


def _prestart_template(ns: argparse.Namespace) -> None:
    """Start the JAX workers' warm template (design 0053) in the background, before the server's
    imports: its interpreter imports JAX on the other core while this one imports the web app,
    the protocol and the event union and starts the pool, which then finds it ready (cold
    ``serve`` to the first jaxpr, issue 36). What the start needs is imported here, in this
    thread (``sandbox/env.py``, ``sandbox/forked.py``: no event union), so that the template's
    process is spawned at once rather than after a thread's share of this one's imports.
    Nothing for a server whose workers run elsewhere (``--pool-socket``, ``--queue`` or their
    ``JAXSCOPE_*`` variables) or are bwrap starts; a failure here is left to the pool's own
    start, which reports it."""
    try:
        settings = settings_from_env(workers=0, pool_socket=ns.pool_socket, queue=ns.queue)
        if settings.pool_socket is not None or settings.queue:
            return
        from jaxscope.sandbox.env import worker_env
        from jaxscope.sandbox.forked import template_for, zygote_problem

        limits = _limits(settings.limits, ns, None)
        if zygote_problem("jax", limits) is not None:
            return
        env = worker_env(kind="jax")
    except Exception:
        return

    def start() -> None:
        with contextlib.suppress(Exception):
            template_for(env)

    threading.Thread(target=start, name="jaxscope-template-prestart", daemon=True).start()


def _prestart_for_run(args: Sequence[str]) -> None:
    """``jaxscope run EXHIBIT ...``: the JAX template started before the run options' parser
    imports pydantic and the protocol (:func:`_prestart_template`), when the run will surely go
    to a JAX worker forked from it: the exhibit (the first argument) runs in a
    "jax" worker whatever its options, and no flag changes the kind or the sandbox (``--device``,
    ``--unsafe-no-sandbox``), and the command will run: its file is stdin, a file or an example
    name, and no ``--help``. Anything else (a torch exhibit, a typo, a missing file, a flag
    before the exhibit) starts nothing here: a command that ends at once would otherwise wait at
    its exit for the template's start (the launcher thread is joined at shutdown); the pool
    starts what a run needs, as before."""
    if len(args) < 2 or any(
        a.startswith(("--device", "--unsafe-no-sandbox", "--help")) or a == "-h" for a in args
    ):
        return
    exhibit = EXHIBITS.get(args[0])
    if exhibit is None or exhibit.worker_options:
        return
    if args[1] != "-" and not isinstance(snippet_file(exhibit, Path(args[1])), Path):
        return
    from jaxscope.sandbox.kinds import worker_kind

    if worker_kind(exhibit.id) != "jax":
        return
    _prestart_template(argparse.Namespace(pool_socket=None, queue=None, cpu=None, memory_gib=None))


def _serve(
    ns: argparse.Namespace, watched: WatchedFile | None = None, *, open_browser: bool = False
) -> int:
    """``jaxscope serve`` (``watched``: ``jaxscope watch``); the caller has started the
    template (:func:`_prestart_template`)."""
    from urllib.parse import quote

    import uvicorn

    from jaxscope.server.app import create_app, with_token
    from jaxscope.server.catalogue import IncompleteExhibit
    from jaxscope.server.launch import CannotListen, bind, bound_port
    from jaxscope.server.stale_frontend import stale_warning

    if ns.token is not None:
        print(
            "jaxscope: note: --token is visible to every local process (ps, /proc/PID/cmdline); "
            "prefer the JAXSCOPE_TOKEN environment variable",
            file=sys.stderr,
        )
    settings = settings_from_env(
        host=ns.host,
        port=ns.port,
        token=ns.token,
        workers=ns.workers,
        max_workers=ns.max_workers,
        pool_socket=ns.pool_socket,
        queue=ns.queue,
    )
    # A watched file is served only with a token, on loopback too (design 0052).
    settings = with_token(
        dataclasses.replace(
            settings,
            limits=_limits(settings.limits, ns, ns.timeout),
            forwarded_allow_ips=getattr(ns, "forwarded_allow_ips", None),
        ),
        required=watched is not None,
    )
    if settings.queue is not None:
        from jaxscope.bus.jobs import BadQueueUrl, check_url

        try:
            check_url(settings.queue)
        except BadQueueUrl as exc:
            print(f"jaxscope: {exc}", file=sys.stderr)
            return EXIT_USAGE
    elif settings.pool_socket is None and (refusal := sandbox_refusal(settings.limits)):
        print(refusal, file=sys.stderr)
        return EXIT_USAGE
    try:
        app = create_app(settings, watched)
    except IncompleteExhibit as exc:
        print(f"jaxscope: cannot start: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:  # the port is ours before its URL is printed (server/launch.py)
        sockets = bind(settings.host, settings.port)
    except CannotListen as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    port = bound_port(sockets)
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    url = f"http://{host}:{port}/"
    token = "" if settings.token is None else "?token=" + quote(settings.token, safe="")
    url += token
    print(f"jaxscope is serving at {url}", flush=True)
    if (stale := stale_warning(settings.frontend_dist)) is not None:
        print(stale, file=sys.stderr, flush=True)
    opened: Path | None = None
    if watched is not None:
        # The page follows the file when its URL asks to (design 0036).
        page = url + ("&" if "?" in url else "?") + "follow=1"
        print(f"following {watched.path} in {watched.exhibit}: {page}", flush=True)
        if open_browser:
            opened = _open_when_up(page, f"http://{host}:{port}/api/health{token}")
    # loop="asyncio": uvloop (installed with uvicorn[standard]) starts subprocesses through
    # libuv, which leaves the server's inherited file descriptors open in every sandbox worker.
    # No per-message deflate: compressing a 16 MiB event would hold the event loop for all.
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=port,
        log_level="info",
        loop="asyncio",
        ws_per_message_deflate=False,
        # The app adds the proxy headers' middleware itself, only when asked to (uvicorn's own
        # default would believe X-Forwarded-For from 127.0.0.1).
        proxy_headers=False,
    )
    server = uvicorn.Server(config)
    from jaxscope.server import log_redact

    log_redact.install()  # after Config configured uvicorn's loggers: no token in the log
    # uvicorn shuts down gracefully on SIGTERM, then raises the signal again once its own handler
    # is gone: the handler below turns that into an exception, so the cleanup runs before the
    # process ends by SIGTERM as before.
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    terminated = False
    try:
        server.run(sockets=sockets)
    except KeyboardInterrupt:  # as uvicorn.run: Ctrl-C ends the server quietly
        pass
    except _Terminated:
        terminated = True
    finally:
        signal.signal(signal.SIGTERM, previous)
        for sock in sockets:
            sock.close()
        if opened is not None:
            shutil.rmtree(opened, ignore_errors=True)
    if terminated:
        signal.raise_signal(signal.SIGTERM)
    return 0 if server.started else EXIT_FAILED


class _Terminated(Exception):
    """SIGTERM, raised where the server runs (:func:`_serve`)."""


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise _Terminated


def _pool(ns: argparse.Namespace) -> int:
    import asyncio
    import logging

    from jaxscope.sandbox.pool_server import SocketPathTaken

    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(name)s: %(message)s")
    settings = settings_from_env(workers=ns.workers, max_workers=ns.max_workers)
    limits = _limits(settings.limits, ns, ns.timeout)
    if refusal := sandbox_refusal(limits):
        print(refusal, file=sys.stderr)
        return EXIT_USAGE
    if ns.socket is None:
        ns.queue = ns.queue or settings.queue
        if not ns.queue:
            print(
                "jaxscope pool: say where runs come from: --socket PATH, or --queue URL "
                "(or JAXSCOPE_QUEUE)",
                file=sys.stderr,
            )
            return EXIT_USAGE
        return _pool_host(ns, limits, settings)
    try:
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: the socket is removed too
            asyncio.run(_pool_until_terminated(ns.socket, limits, settings))
    except SocketPathTaken as exc:
        print(f"jaxscope pool: cannot serve: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        # A path too long for a Unix socket (108 bytes), a folder that does not exist...
        why = exc.strerror or str(exc)
        print(f"jaxscope pool: cannot serve on {ns.socket}: {why}", file=sys.stderr)
        return EXIT_USAGE
    return 0


async def _until_terminated(
    serving: asyncio.Task[None], started: asyncio.Event, ready: str
) -> None:
    """Wait for ``serving`` (a pool's task) until SIGTERM (docker stop, kill) or until it ends;
    print ``ready`` once ``started`` is set. Cancels ``serving`` on the way out, so that its own
    clean-up runs (a raised error of ``serving`` comes out here)."""
    import asyncio

    terminated = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, terminated.set)
    try:
        announced = asyncio.create_task(started.wait())
        await asyncio.wait({serving, announced}, return_when=asyncio.FIRST_COMPLETED)
        announced.cancel()
        if started.is_set():
            print(ready, flush=True)
        ended = asyncio.create_task(terminated.wait())
        await asyncio.wait({serving, ended}, return_when=asyncio.FIRST_COMPLETED)
        ended.cancel()
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving


async def _pool_until_terminated(path: Path, limits: Limits, settings: Settings) -> None:
    """Serve the pool on ``path`` until SIGTERM (docker stop, kill) or Ctrl-C; either way the
    pool stops its workers and removes its socket (``serve_pool``'s cleanup). Says where it
    serves once the socket accepts connections."""
    import asyncio

    from jaxscope.sandbox.pool_server import serve_pool

    started = asyncio.Event()
    serving = asyncio.create_task(
        serve_pool(
            path, limits, settings.workers, started=started, max_workers=settings.max_workers
        )
    )
    await _until_terminated(serving, started, f"jaxscope pool serving on {path}")


def _pool_host(ns: argparse.Namespace, limits: Limits, settings: Settings) -> int:
    """``jaxscope pool --queue URL``: take runs from the run queue until SIGTERM or Ctrl-C."""
    import asyncio

    from jaxscope.bus.host import PoolHost, lanes_problem, parse_lanes
    from jaxscope.bus.jobs import BadQueueUrl, default_host_id
    from jaxscope.bus.store import connect

    try:
        lanes = parse_lanes(ns.lanes)
        problem = lanes_problem(lanes)
        if problem is not None:
            raise ValueError(problem)
        redis = connect(ns.queue)
    except (ValueError, BadQueueUrl) as exc:
        print(f"jaxscope pool: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if ns.per_client < 1:
        print("jaxscope pool: --per-client must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    host = PoolHost(
        redis,
        lanes,
        limits,
        host_id=default_host_id(),
        per_client=ns.per_client,
        warm=min(settings.workers, sum(lanes.values())),
    )

    async def serve() -> None:
        started = asyncio.Event()
        serving = asyncio.create_task(host.serve(started))
        try:
            await _until_terminated(
                serving, started, f"jaxscope pool {host.host_id} takes {ns.lanes}"
            )
        finally:
            await redis.aclose()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())
    return 0


def describe_failure(failed: RunFailed) -> str:
    """The stderr text of a failed run: kind, JAX's error class and message, ``line N``."""
    head = f"jaxscope: run failed ({failed.kind})"
    what = f"{failed.error_class}: {failed.message}" if failed.error_class else failed.message
    lines = [f"{head}: {what}"]
    if failed.source is not None:
        text = next(
            (fr.text for fr in reversed(failed.traceback) if fr.line == failed.source.line), None
        )
        col = f", column {failed.source.column}" if failed.source.column is not None else ""
        where = f"  at line {failed.source.line}{col}"
        if failed.source.function:
            where += f" in {failed.source.function}"
        lines.append(where + (f": {text}" if text else ""))
    if failed.stage:
        lines.append(f"  stage: {failed.stage}" + (f" ({failed.during})" if failed.during else ""))
    elif failed.during:
        lines.append(f"  during: {failed.during}")
    if failed.explanation:
        lines.append(f"  why: {failed.explanation}")
    if failed.fix:
        lines.append(f"  fix: {failed.fix}")
    return "\n".join(lines) + "\n"


def describe_shown(error: ShownError) -> str:
    """The stderr text of an error JAX raised on the user's code that a finished run shows:
    one line saying so, then JAX's error (first line of its message) and ``why`` when known. A
    finding (``ShownError.kind``: a problem the exhibit found, e.g. a gradient that disagrees
    with finite differences, or a host-to-device copy in every step of review) is said to be
    one, with its sentence in full. Not every finding is a wrong number (review's and
    xla_cache's are costs), so the line says "a problem", not "a wrong result"."""
    at = f" at line {error.line}" if error.line is not None else ""
    head = (
        f"jaxscope: the run finished; JAX raised {error.error_class}{at} in "
        f"{error.computation}, shown by the exhibit as {error.artefact} "
        f"(--print {error.artefact})"
    )
    if error.kind == "finding":  # no error: a problem the exhibit found
        head = (
            f"jaxscope: the run finished; the exhibit found a problem ({error.error_class})"
            f"{at} in {error.computation}, shown as {error.artefact} (--print {error.artefact})"
        )
    first = error.message.strip().splitlines()[0] if error.message.strip() else ""
    if len(first) > 300 and error.kind != "finding":
        first = first[:299] + "…"
    lines = [head, f"  {error.error_class}: {first}" if first else f"  {error.error_class}"]
    if error.note:
        lines.append(f"  note: {error.note}")
    return "\n".join(lines) + "\n"


async def run_headless(
    exhibit: str,
    code: str,
    settings: Settings,
    *,
    stream: TextIO | None = None,
    options: RunOptions | None = None,
    device: Literal["accelerator", "cpu"] | None = None,
) -> list[EventModel]:
    """Run ``exhibit`` on ``code`` through a one-session pool; events in order (the last is
    the terminal one), each whole: an event too large for one line came in ranges, put back
    together here (``jaxscope.whole_events``, design 0051). With ``stream``, each event is also
    written there as one JSON line. ``device``: ``RunRequest.device`` (design 0069)."""
    from jaxscope.protocol import RunOptions, RunRequest
    from jaxscope.sandbox.pool import WorkerPool
    from jaxscope.sandbox.session import Session, reap_all
    from jaxscope.whole_events import WholeEvents

    pool = WorkerPool(settings.limits, size=0)
    session = Session(pool, EXHIBITS)
    events: list[EventModel] = []
    whole = WholeEvents()

    def take(ready: list[EventModel]) -> None:
        for event in ready:
            events.append(event)
            if stream is not None:
                stream.write(event.model_dump_json() + "\n")
                stream.flush()

    async def emit(event: EventModel) -> None:
        take(whole.feed(event))

    request = RunRequest(
        run_id=uuid.uuid4().hex[:12],
        exhibit=exhibit,
        code=code,
        options=options or RunOptions(),
        device=device,
    )
    try:
        await session.run(request, emit)
    finally:
        take(whole.finish())
        await session.close()
        await pool.close()
        await reap_all()
    return events


def run_headless_sync(
    exhibit: str,
    code: str,
    settings: Settings,
    *,
    stream: TextIO | None = None,
    options: RunOptions | None = None,
    device: Literal["accelerator", "cpu"] | None = None,
) -> list[EventModel]:
    """:func:`run_headless` in a fresh event loop. The events are handed out of the loop's main
    task, never as its result: ``asyncio.run`` puts SIGINT's handler back through
    ``signal.signal``, whose check of the old handler (a partial holding the main task) formats
    its repr, with the task's result: for a 20,000-eqn program's events, 11 s of repr."""
    import asyncio
    import concurrent.futures

    out: list[list[EventModel]] = []

    async def main() -> None:
        out.append(
            await run_headless(
                exhibit, code, settings, stream=stream, options=options, device=device
            )
        )

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(main())
    else:
        # Called where an event loop already runs (a notebook's, Playwright's sync API in a
        # test): asyncio.run refuses to start inside it, so the run gets a thread of its own.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, main()).result()
    return out[0]


def _summary(events: Sequence[EventModel], exhibit: str) -> str:
    from jaxscope.protocol import RunFinished

    counts = collections.Counter(e.type for e in events)
    terminal = events[-1]
    lines = [f"exhibit {exhibit}: {terminal.type}"]
    if isinstance(terminal, RunFinished):
        lines[0] += f" in {terminal.duration_ms:.1f} ms (worker time)"
    lines.append("events: " + ", ".join(f"{t} x{n}" for t, n in counts.items()))
    available = [
        name for name, extract in EXHIBITS[exhibit].artefacts.items() if extract(events) is not None
    ]
    if available:
        lines.append("artefacts (--print): " + ", ".join(available))
    return "\n".join(lines) + "\n"


def read_code(stream: BinaryIO) -> str:
    """The snippet in ``stream`` as UTF-8 (utf-8-sig: a file saved with a byte-order mark, as
    Windows editors do, reads as plain code), newlines as they are; at most
    ``MAX_CODE_CHARS + 1`` characters are read, so that an endless or huge input is refused
    (by the caller) without reading it all. Raises ``UnicodeDecodeError``."""
    from jaxscope.protocol import MAX_CODE_CHARS

    text = io.TextIOWrapper(stream, encoding="utf-8-sig", newline="")
    try:
        return text.read(MAX_CODE_CHARS + 1)
    finally:
        text.detach()  # leave ``stream`` open: its owner closes it


def _read_stdin(needs_snippet: bool) -> str:
    """FILE ``-``: the snippet from stdin (:func:`read_code`); nothing from a terminal when the
    exhibit needs no snippet (``jaxscope run config - --print options``)."""
    if not needs_snippet and sys.stdin.isatty():
        return ""
    return read_code(sys.stdin.buffer)


def snippet_file(exhibit: Exhibit, given: Path) -> Path | str:
    """The file ``jaxscope run ID FILE`` reads: FILE when it exists, else the file of the entry
    of the exhibit's picker named FILE (``mlp_loss``, ``real/gpt_stack``:
    ``Exhibit.picker_paths``, the list the page's picker shows), else why not (the sentence
    after "cannot read FILE:"), naming where an example of that name lives (a borrowed example
    is in the folder of the exhibit that owns it, not in ``exhibits/ID/examples``)."""
    if given.exists():
        return given
    entries = exhibit.picker_paths()
    if (path := entries.get(str(given).removesuffix(".py"))) is not None:
        return path
    named = [(name, path) for name, path in entries.items() if path.name == given.name]
    if not named:
        return (
            f"No such file, and {exhibit.id}'s picker offers no example of that name "
            f"(it offers {', '.join(entries)})"
        )
    name, path = named[0]
    where = path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path
    return (
        f"No such file; {exhibit.id}'s example {name} is {where} "
        f"(or run it by name: jaxscope run {exhibit.id} {name})"
    )


def _read_file(path: Path) -> str:
    """FILE: the snippet in ``path`` (:func:`read_code`)."""
    with path.open("rb") as fh:
        return read_code(fh)


def code_too_long(code: str, source: str) -> str | None:
    """Why ``code`` (read from ``source``) is refused for its length, or None."""
    from jaxscope.protocol import MAX_CODE_CHARS

    if len(code) <= MAX_CODE_CHARS:
        return None
    return (
        f"the code on {source} is longer than {MAX_CODE_CHARS:,} characters,"
        " the most jaxscope accepts; nothing was run"
    )


def settings_and_options(ns: argparse.Namespace, exhibit: str) -> tuple[Settings, RunOptions] | str:
    """The settings (limits from the flags) and run options of a ``run``/``diff`` command for
    ``exhibit``, or the usage error that refuses them (the sandbox refused, a bad option, a
    flag of another exhibit), as the line to print."""
    settings = settings_from_env(workers=0)
    settings = dataclasses.replace(settings, limits=_limits(settings.limits, ns, ns.timeout))
    if refusal := sandbox_refusal(settings.limits):
        return refusal
    try:
        options = _run_options(ns)
    except ValueError as exc:
        return f"jaxscope {ns.command}: {exc}"
    if (elsewhere := _options_elsewhere(ns, exhibit)) is not None:
        return f"jaxscope {ns.command}: {elsewhere}"
    return settings, options


def _run(ns: argparse.Namespace) -> int:
    from jaxscope.protocol import RunFailed, RunStarted

    exhibit = EXHIBITS.get(ns.exhibit)
    if exhibit is None:
        print(
            f"jaxscope: unknown exhibit {ns.exhibit!r}; known: {', '.join(EXHIBITS)}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if ns.artefact is not None and ns.artefact not in exhibit.artefacts:
        print(
            f"jaxscope: exhibit {exhibit.id!r} has no artefact {ns.artefact!r}; "
            f"valid: {', '.join(exhibit.artefacts)}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if ns.format is not None and ns.artefact is None:
        print("jaxscope run: --format goes with --print ARTEFACT", file=sys.stderr)
        return EXIT_USAGE
    if str(ns.file) != "-":
        found = snippet_file(exhibit, ns.file)
        if isinstance(found, str):
            print(f"jaxscope: cannot read {ns.file}: {found}", file=sys.stderr)
            return EXIT_USAGE
        ns.file = found
    try:
        code = _read_stdin(exhibit.needs_snippet) if str(ns.file) == "-" else _read_file(ns.file)
    except OSError as exc:
        print(f"jaxscope: cannot read {ns.file}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    except UnicodeDecodeError as exc:
        print(f"jaxscope run: {ns.file} is not UTF-8 text: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if too_long := code_too_long(code, "stdin" if str(ns.file) == "-" else str(ns.file)):
        print(f"jaxscope run: {too_long}", file=sys.stderr)
        return EXIT_USAGE
    prepared = settings_and_options(ns, exhibit.id)
    if isinstance(prepared, str):
        print(prepared, file=sys.stderr)
        return EXIT_USAGE
    settings, options = prepared
    if ns.artefact is not None and (why := exhibit.unavailable(ns.artefact, options)):
        # Before the run: a run that cannot make the artefact asked for is a usage error.
        print(f"jaxscope run: {why}", file=sys.stderr)
        return EXIT_USAGE
    if ns.html is not None:
        from jaxscope.standalone import TemplateMissing, read_template

        try:  # before the run: a missing frontend build is a usage error, not a wasted run
            template = read_template()
        except TemplateMissing as exc:
            print(f"jaxscope run --html: {exc}", file=sys.stderr)
            return EXIT_USAGE
    events = run_headless_sync(
        exhibit.id,
        code,
        settings,
        stream=sys.stdout if ns.json else None,
        options=options,
        device=ns.device,
    )
    for event in events:
        if isinstance(event, RunStarted) and event.device_note:
            # stderr: stdout may be the --json stream or an artefact a script reads
            sys.stderr.write(f"jaxscope: note: {event.device_note}\n")
    if ns.html is not None:
        if trouble := _write_html(ns.html, template, exhibit.id, code, options, events):
            print(f"jaxscope run --html: {trouble}", file=sys.stderr)
            return EXIT_FAILED
        # stderr: stdout may be the --json stream or an artefact a script reads
        size_kb = ns.html.stat().st_size / 1024
        print(
            f"jaxscope run --html: wrote {ns.html} ({size_kb:,.0f} KB); it replays this run in"
            " a browser, from disk, with no server",
            file=sys.stderr,
        )
    terminal = events[-1]
    if isinstance(terminal, RunFailed):
        sys.stderr.write(describe_failure(terminal))
        # What the run showed before it failed is still printed (the pytree exhibit flattens
        # ``args`` before ``f`` raises); the exit status says the run failed.
        text = exhibit.artefacts[ns.artefact](events) if ns.artefact is not None else None
        if text is not None:
            sys.stdout.write(formatted(exhibit.id, ns.artefact, text, ns.format) + "\n")
        return EXIT_FAILED
    # JAX's errors the exhibit shows as its lesson: the run finished, the artefact is printed,
    # and the exit status tells a script that JAX rejected the user's code.
    for note in exhibit.notes(events):
        sys.stderr.write(f"jaxscope: note: {note}\n")
    shown = exhibit.shown_errors(events)
    for error in shown:
        sys.stderr.write(describe_shown(error))
    status = EXIT_JAX_ERROR_SHOWN if shown else 0
    if ns.artefact is not None:
        text = exhibit.artefacts[ns.artefact](events)
        if text is None:
            print(f"jaxscope: the run produced no {ns.artefact!r}", file=sys.stderr)
            return status or EXIT_FAILED
        sys.stdout.write(formatted(exhibit.id, ns.artefact, text, ns.format) + "\n")
    elif not ns.json:
        sys.stdout.write(_summary(events, exhibit.id))
    return status


def _write_html(
    out: Path,
    template: str,
    exhibit: str,
    code: str,
    options: RunOptions,
    events: Sequence[EventModel],
) -> str | None:
    """Write the run's standalone HTML file to ``out`` (a failed run too: the page shows its
    error); the reason it could not be written, or None."""
    from jaxscope.standalone import embed, recording

    try:
        out.write_text(embed(template, recording(exhibit, code, options, events)), "utf-8")
    except OSError as exc:
        return f"cannot write {out}: {exc.strerror}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``jaxscope`` console script; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    # ``serve`` and ``watch`` take none of the run options' flags: their parser imports neither
    # pydantic nor the protocol, and the template starts before either (issue 36's cold start).
    serving = args[:1] in (["serve"], ["watch"])
    if args[:1] == ["run"]:
        _prestart_for_run(args[1:])
    ns = build_parser(run_options=not serving).parse_args(args)
    if ns.command == "serve":
        _prestart_template(ns)
        return _serve(ns)
    if ns.command == "watch":
        return _watch(ns)
    if ns.command == "pool":
        return _pool(ns)
    if ns.command == "install-torch":
        from jaxscope.torch_install import install_torch

        return install_torch(dry_run=ns.dry_run)
    try:
        if ns.command == "diff":
            from jaxscope.cli_diff import run_diff

            return run_diff(ns)
        return _run(ns)
    except BrokenPipeError:
        # The reader of stdout went away (`| head`): stop quietly, like other Unix tools.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
