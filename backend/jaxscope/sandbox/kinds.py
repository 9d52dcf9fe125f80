"""Worker kinds: which interpreter runs an exhibit's probe, and with which limits (design 0025).

Two kinds (``jaxscope.protocol.WorkerKind``):

- ``"jax"``: the interpreter of this process (the JAX venv, ``.venv/``); JAX imported at warm-up,
  8 virtual CPU devices, the sandbox's default ``RLIMIT_AS`` (3 GiB).
- ``"torch"``: the PyTorch/XLA track, in a venv of its own (``.venv-torch/``, made by ``make
  torch`` from ``requirements-torch.txt``: torch 2.9.0 + torch_xla 2.9.0 pinned together, with
  the few pure-Python packages the runner imports). Its warm-up imports torch and torch_xla but
  creates no PJRT client (torch_xla holds one per process and reads ``PJRT_DEVICE`` and its
  other settings when it creates it: inside the run). ``import torch`` alone maps 5 GB of
  address space (PyPI's build loads its CUDA libraries even on a CPU), so the exhibits of this
  kind set their own ``Exhibit.address_space_bytes``: the worker's limits are the sandbox's
  with that one field replaced (:func:`exhibit_limits`), never a global loosening. Like a JAX
  worker it is forked from a warm template that made those imports once (design 0053).
- ``"tf"``: the TensorFlow bridges (``jax2tf``, ``tf2jax``: design 0066), in a venv of their own
  (``.venv-tf/``, made by ``make tf`` from ``requirements-tf.txt``: tensorflow-cpu, tf2jax and
  the JAX of the JAX venv, since jax2tf lives in jax). Its warm-up is a JAX worker's plus
  ``import tensorflow``; it starts with bubblewrap (no forked template) and, like torch, the
  finder below, never the JAX venv's site-packages.
- ``"tpu_compile"``: compiles for a TPU v5e on a machine without one (design 0067). The JAX
  venv's interpreter, with libtpu from a folder of its own (``.venv-tpu-site/``, made by ``make
  tpu`` with ``pip install --no-deps --target``), never on a JAX worker's path: only this kind's
  environment names its ``libtpu.so`` (``TPU_LIBRARY_PATH``), with libtpu's offline topology
  (:data:`TPU_COMPILE_ENV`) and ``JAX_PLATFORMS=cpu`` (the CPU stays the default backend; the
  TPU's devices come from ``jax.experimental.topologies``). A bubblewrap start.
- ``"accelerator"``: a JAX worker that opens the host's accelerator (design 0069). Where a host
  has one (``accelerators.attached``), every other JAX worker runs with ``JAX_PLATFORMS=cpu``
  and the JAX runs meant for the chip go to this kind, one worker alive at a time (the pool).

The pool keeps one sub-pool per (kind, limits) pair (``WorkerPool.for_exhibit``). This module
imports neither JAX nor torch.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from exhibits.registry import EXHIBITS, EXHIBITS_DIR
from jaxscope.sandbox import accelerators
from jaxscope.settings import Limits

if TYPE_CHECKING:  # the protocol is not imported to start a template (``sandbox/env.py``)
    from jaxscope.protocol import WorkerKind

# The torch venv's interpreter unless ``JAXSCOPE_TORCH_PYTHON`` names another: in a checkout the
# repository's ``.venv-torch`` (``make torch``), beside the JAX venv; in an installed package
# (a wheel: no Makefile beside ``exhibits``) a venv in the user's data folder that
# ``jaxscope install-torch`` makes (design 0057), never a path inside site-packages.
CHECKOUT_ROOT = EXHIBITS_DIR.parent
TORCH_VENV = CHECKOUT_ROOT / ".venv-torch"
TORCH_PYTHON_ENV = "JAXSCOPE_TORCH_PYTHON"

TORCH_MISSING = (
    "the PyTorch/XLA track is not installed here: its exhibits run in a venv of their own, "
    "{venv} (torch 2.9.0 + torch_xla 2.9.0, about 7 GB, 2-3 minutes). Install it with "
    "{how}"
)
HOW_CHECKOUT = "`make torch` (`make serve` and `make test` do it too)"
HOW_INSTALLED = (
    "`jaxscope install-torch` (it makes that venv with pip from the pins the package carries), "
    "or name another venv's python in {env}"
)


TF_PYTHON_ENV = "JAXSCOPE_TF_PYTHON"
TF_MISSING = (
    "the TensorFlow bridge is not installed here: its exhibit runs in a venv of its own, {venv} "
    "(tensorflow-cpu 2.21.0 + tf2jax 0.3.8 + JAX 0.10.2, about 2 GB, about 5 minutes). "
    "Install it with {how}"
)
TF_HOW_CHECKOUT = "`make tf` (`make serve` and `make test` do it too; `TF=no` leaves it out)"
TF_HOW_INSTALLED = (
    "a venv made with `pip install --no-deps -r requirements-tf.txt` (the checkout's pins), "
    "its python named in {env}"
)


TPU_SITE_ENV = "JAXSCOPE_TPU_SITE"
TPU_MISSING = (
    "compiling for a TPU needs libtpu, which is not installed here: it goes to a folder of its "
    "own, {site} (libtpu 0.0.42.1, the version JAX 0.10.2 pins; 684 MB, about 25 s). Install "
    "it with {how}"
)
TPU_HOW_CHECKOUT = "`make tpu` (`make serve` and `make test` do it too; `TPU=no` leaves it out)"
TPU_HOW_INSTALLED = (
    "`pip install --no-deps --target DIR libtpu==0.0.42.1`, that folder named in {env}"
)
# libtpu's settings for a topology without a chip (checked with libtpu 0.0.42.1,
# ``../shared/reference/tpu-offline-compile.md``): no metadata server, one host of a v5e pod
# slice; a TPU host's own TPU_* settings are replaced (the compile is for this topology).
TPU_COMPILE_ENV = {
    "JAX_PLATFORMS": "cpu",
    "TPU_SKIP_MDS_QUERY": "1",
    "TPU_ACCELERATOR_TYPE": "v5litepod-4",
    "TPU_WORKER_HOSTNAMES": "localhost",
    "TPU_WORKER_ID": "0",
}
# The offline topology: libtpu refuses "v5e:1x1" (not divisible by its default 2x2 chips per
# host); the program is compiled for one device of it, one chip.
TPU_TOPOLOGY = "v5e:2x2"
# Loading libtpu maps 2.2 GB of address space (VmPeak measured on this compile); the sandbox's
# default RLIMIT_AS is 3 GiB, too close for a program of any size.
TPU_COMPILE_ADDRESS_SPACE = 6 * 2**30


def in_checkout(root: Path | None = None) -> bool:
    """Whether ``exhibits`` is run from a checkout (its Makefile beside it), not installed."""
    return ((root or CHECKOUT_ROOT) / "Makefile").is_file()


def default_torch_venv(root: Path | None = None) -> Path:
    """Where the torch venv is looked for when ``JAXSCOPE_TORCH_PYTHON`` names none: the
    checkout's ``.venv-torch``, else ``$XDG_DATA_HOME/jaxscope/venv-torch`` (by default
    ``~/.local/share/jaxscope/venv-torch``), which ``jaxscope install-torch`` makes."""
    if in_checkout(root):
        return (root or CHECKOUT_ROOT) / ".venv-torch"
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "jaxscope" / "venv-torch"


def install_advice(root: Path | None = None) -> str:
    """The command that installs the torch venv here: ``make torch`` in a checkout, ``jaxscope
    install-torch`` for an installed package (which has no Makefile)."""
    if in_checkout(root):
        return HOW_CHECKOUT
    return HOW_INSTALLED.format(env=TORCH_PYTHON_ENV)


def worker_kind(exhibit_id: str, options: object = None, device: str | None = None) -> WorkerKind:
    """The kind of worker that runs ``exhibit_id`` with run ``options`` (a ``RunOptions``, or
    None for the defaults): the exhibit's ``worker``, or the kind of the first of its
    ``worker_options`` whose option has that value ("jax" for an unknown id: the run then fails
    as an unknown exhibit inside a JAX worker, as before). On a host with an accelerator
    (``accelerators.attached``) a "jax" run goes to the "accelerator" worker unless ``device``
    (``RunRequest.device``) is "cpu" (design 0069)."""
    exhibit = EXHIBITS.get(exhibit_id)
    if exhibit is None:
        return "jax"
    kind = exhibit.worker
    for option, value, option_kind in exhibit.worker_options:
        if getattr(options, option, None) == value:
            kind = option_kind
            break
    if kind == "jax" and device != "cpu" and accelerators.attached() is not None:
        return "accelerator"
    return kind


def serves(kind: WorkerKind, exhibit_id: str) -> bool:
    """Whether a worker of ``kind`` may run ``exhibit_id`` (for some options)."""
    exhibit = EXHIBITS.get(exhibit_id)
    if exhibit is None:
        return False
    if kind == "accelerator":  # a JAX worker that holds the chip (design 0069)
        kind = "jax"
    return kind == exhibit.worker or kind in {k for _, _, k in exhibit.worker_options}


def tpu_site() -> Path:
    """The folder libtpu is installed into (``JAXSCOPE_TPU_SITE``, else the checkout's
    ``.venv-tpu-site``, else ``$XDG_DATA_HOME/jaxscope/tpu-site``)."""
    named = os.environ.get(TPU_SITE_ENV)
    if named:
        return Path(named).absolute()
    if in_checkout():
        return CHECKOUT_ROOT / ".venv-tpu-site"
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "jaxscope" / "tpu-site"


def tpu_library() -> Path:
    """libtpu's shared library in :func:`tpu_site` (what ``TPU_LIBRARY_PATH`` names)."""
    return tpu_site() / "libtpu" / "libtpu.so"


def tpu_compile_env() -> dict[str, str]:
    """What a "tpu_compile" worker's environment sets on top of a JAX worker's."""
    return {**TPU_COMPILE_ENV, "TPU_LIBRARY_PATH": str(tpu_library())}


def torch_python() -> Path:
    """The torch venv's ``python`` (``JAXSCOPE_TORCH_PYTHON``, else ``bin/python`` of
    :func:`default_torch_venv`). Not resolved: a venv's ``bin/python`` is a symlink to its
    base Python, and only the venv's path makes it a venv."""
    named = os.environ.get(TORCH_PYTHON_ENV)
    return Path(named).absolute() if named else default_torch_venv() / "bin" / "python"


def default_tf_venv(root: Path | None = None) -> Path:
    """Where the TensorFlow venv is looked for when ``JAXSCOPE_TF_PYTHON`` names none: the
    checkout's ``.venv-tf``, else ``$XDG_DATA_HOME/jaxscope/venv-tf``."""
    if in_checkout(root):
        return (root or CHECKOUT_ROOT) / ".venv-tf"
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "jaxscope" / "venv-tf"


def tf_python() -> Path:
    """The TensorFlow venv's ``python`` (``JAXSCOPE_TF_PYTHON``, else ``bin/python`` of
    :func:`default_tf_venv`); not resolved, as :func:`torch_python`."""
    named = os.environ.get(TF_PYTHON_ENV)
    return Path(named).absolute() if named else default_tf_venv() / "bin" / "python"


def python_of(kind: WorkerKind) -> str:
    """The interpreter a worker of ``kind`` runs (absolute path)."""
    if kind in ("jax", "tpu_compile", "accelerator"):
        return sys.executable
    return str(tf_python() if kind == "tf" else torch_python())


def kind_problem(kind: WorkerKind) -> str | None:
    """Why workers of ``kind`` cannot start here (its venv is missing), or None."""
    if kind in ("jax", "accelerator"):
        return None
    if kind == "tpu_compile":
        if not tpu_library().is_file():
            how = TPU_HOW_CHECKOUT if in_checkout() else TPU_HOW_INSTALLED.format(env=TPU_SITE_ENV)
            return TPU_MISSING.format(site=tpu_site(), how=how)
        return None
    if kind == "tf":
        python = tf_python()
        if not os.access(python, os.X_OK):
            how = TF_HOW_CHECKOUT if in_checkout() else TF_HOW_INSTALLED.format(env=TF_PYTHON_ENV)
            return TF_MISSING.format(venv=python.parent.parent, how=how)
        return None
    python = torch_python()
    if not os.access(python, os.X_OK):
        return TORCH_MISSING.format(venv=python.parent.parent, how=install_advice())
    return None


def exhibit_limits(exhibit_id: str, limits: Limits, kind: WorkerKind | None = None) -> Limits:
    """The limits a worker for ``exhibit_id`` starts with: ``limits`` with the exhibit's own
    ``address_space_bytes`` where it sets one (or, for a "tpu_compile" ``kind``,
    :data:`TPU_COMPILE_ADDRESS_SPACE`) and ``limits`` has a limit at all (0, no ``RLIMIT_AS``,
    stays 0)."""
    exhibit = EXHIBITS.get(exhibit_id)
    own = exhibit.address_space_bytes if exhibit else None
    if kind == "tpu_compile":
        own = max(own or 0, TPU_COMPILE_ADDRESS_SPACE)
    if own is None or limits.address_space_bytes == 0:
        return limits
    return dataclasses.replace(limits, address_space_bytes=own)


# How a torch worker imports ``jaxscope`` and ``exhibits`` (design 0047): its venv does not
# install them, and the folder that holds them is the JAX side's site-packages when jaxscope is
# installed (the hosted image, a wheel) rather than run from a checkout. On ``PYTHONPATH`` that
# folder would put the JAX side's numpy, typing_extensions, yaml ... before the torch venv's own
# pins, and make jax and flax importable to torch_xla. So the worker starts with a bootstrap
# (``python -c``): a finder that resolves exactly these two top-level names from their real
# folders (``__file__`` stays their real path), then the runner as ``python -m`` runs it.
_FINDER = """\
import importlib.machinery, runpy, sys
class _JaxscopePackages:
    roots = {roots!r}
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        root = cls.roots.get(name)
        return importlib.machinery.PathFinder.find_spec(name, [root]) if root else None
sys.meta_path.insert(0, _JaxscopePackages)
"""
_RUN_MODULE = 'runpy.run_module("{module}", run_name="__main__", alter_sys=True)\n'


def package_finder(roots: dict[str, str]) -> str:
    """Python source that makes exactly the top-level packages named in ``roots`` importable,
    each from its folder there (``{name: folder that holds it}``), ahead of ``sys.path``."""
    return _FINDER.format(roots=roots)


def package_folders() -> dict[str, str]:
    """The real folder that holds each of the ``jaxscope`` and ``exhibits`` packages, by name."""
    import exhibits
    import jaxscope

    return {
        m.__name__: os.path.dirname(os.path.dirname(os.path.realpath(m.__file__ or "")))
        for m in (jaxscope, exhibits)
    }


def module_command(kind: WorkerKind, module: str) -> list[str]:
    """The command that runs ``module`` (``python -m module``; its arguments follow) with the
    interpreter of a worker of ``kind``: for JAX this process's ``python -m``; for torch, the
    torch venv's python with the bootstrap above, which sees only those two packages of the
    JAX side, then the module as ``python -m`` runs it; the same for the TensorFlow venv's."""
    if kind in ("jax", "tpu_compile", "accelerator"):
        return [sys.executable, "-m", module]
    finder = package_finder(package_folders())
    return [python_of(kind), "-c", finder + _RUN_MODULE.format(module=module)]


def runner_command(kind: WorkerKind) -> list[str]:
    """The command that starts the sandbox runner in a worker of ``kind`` (its arguments
    follow): :func:`module_command` of ``jaxscope.sandbox.runner``."""
    return module_command(kind, "jaxscope.sandbox.runner")


def venv_paths(python: str) -> tuple[str, ...]:
    """What a worker running ``python`` must see read-only besides the system: the venv it
    belongs to (``bin/python``'s grandparent) and the base installation its symlink resolves
    to (both real paths)."""
    venv = Path(python).absolute().parent.parent
    base = Path(os.path.realpath(python)).parent.parent
    return tuple(sorted({os.path.realpath(venv), str(base)}))
