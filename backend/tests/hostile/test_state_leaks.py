"""Hostile inputs (issue 12): state one run leaves for the session's next run.

A run patches numpy, jax.numpy, builtins, a probe; lowers the recursion limit; arms timers and
signal handlers; installs profile/trace functions; changes the environment, the cwd, JAX's
config, rlimits, warnings, the collector; leaves threads running or a module to import. Every
run gets a fresh worker, so the session's next, ordinary run sees exactly the state a fresh
worker shows (:data:`PROBE`, compared with a run of it in a session of its own) and finishes
with JAX's defaults (an f32 jaxpr). Each input: both runs end with one terminal event, the damage
was done (the damaging run says so), and nothing of either worker is left behind."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jaxscope.protocol import JaxprStaged

from tests.harness import SandboxHarness
from tests.hostile.hostile_kit import OK_TAIL, Outcome, assert_nothing_left, run

# What a run sees of the worker's state (one JSON line), then an ordinary tracing snippet.
PROBE = """import atexit, builtins, faulthandler, gc, importlib.util, json, os, resource, signal
import sys, threading, warnings
import numpy, jax, jax.numpy as jnp
state = {
    'numpy_sin': round(float(numpy.sin(0.5)), 6),
    'numpy_err': numpy.geterr(),
    'jnp_sin': f'{jnp.sin.__module__}.{jnp.sin.__qualname__}',
    'print': type(builtins.print).__name__ + ':' + builtins.print.__name__,
    'import': type(builtins.__import__).__name__ + ':' + builtins.__import__.__name__,
    'recursion_limit': sys.getrecursionlimit(),
    'itimer': signal.getitimer(signal.ITIMER_REAL),
    'alarm': signal.alarm(0),
    'handlers': [str(signal.getsignal(s)) for s in (signal.SIGALRM, signal.SIGTERM,
                 signal.SIGINT, signal.SIGUSR2)],
    'profile': sys.getprofile() is None,
    'trace': sys.gettrace() is None,
    'env_x': os.environ.get('X'),
    'cwd': os.getcwd(),
    'x64': jax.config.jax_enable_x64,
    'disable_jit': jax.config.jax_disable_jit,
    'threads': threading.active_count(),
    'tmp': sorted(os.listdir('/tmp')),
    'evil': 'evil' in sys.modules or importlib.util.find_spec('evil') is not None,
    'sys_path': sys.path,
    'gc': gc.isenabled(),
    'warnings': len(warnings.filters),
    'umask': os.umask(0o022),
    'nofile': resource.getrlimit(resource.RLIMIT_NOFILE),
    'excepthooks': [sys.excepthook is sys.__excepthook__, threading.excepthook.__module__],
    'switch_interval': sys.getswitchinterval(),
    'int_digits': sys.get_int_max_str_digits(),
    'atexit': atexit._ncallbacks(),
    'faulthandler': faulthandler.is_enabled(),
    'stdout': type(sys.stdout).__name__,
}
try:
    import exhibits.tracing.probe as probe
    state['probe_run'] = f'{probe.run.__module__}.{probe.run.__qualname__}'
except ImportError:
    state['probe_run'] = None
print(json.dumps(state))

def f(x):
    return jnp.sin(x) * 2.0

args = (jnp.ones(3),)
"""


def probe(outcome: Outcome) -> dict[str, Any]:
    outcome.finished()
    staged = [e for e in outcome.events if isinstance(e, JaxprStaged)]
    assert staged and "f32[" in staged[-1].jaxpr.text and "f64" not in staged[-1].jaxpr.text
    line = next(ln for ln in outcome.printed.splitlines() if ln.startswith("{"))
    found: dict[str, Any] = json.loads(line)
    return found


@pytest.fixture(scope="module")
def fresh(sandbox: SandboxHarness) -> dict[str, Any]:
    """What a fresh worker shows."""
    return probe(run(sandbox, PROBE))


# id -> (the damage, then a line that prints DAMAGED evidence; OK_TAIL follows).
DAMAGES: dict[str, str] = {
    "patch_numpy_sin": "import numpy\nnumpy.sin = lambda x: 42.0\nprint('DAMAGED', numpy.sin(0.5))",
    "numpy_errors_raise": (
        "import numpy\nnumpy.seterr(all='raise')\nprint('DAMAGED', numpy.geterr())"
    ),
    "patch_jnp_sin": (
        "import jax.numpy as jnp\njnp.sin = lambda x: x\nprint('DAMAGED', jnp.sin(0.5))"
    ),
    "patch_builtins_print": (
        "import builtins, sys\nreal = builtins.print\nbuiltins.print = lambda *a, **k: None\n"
        "real('DAMAGED', builtins.print)"
    ),
    "patch_builtins_import": (
        "import builtins\nreal = builtins.__import__\n"
        "builtins.__import__ = lambda name, *a, **k: real(name, *a, **k)\n"
        "print('DAMAGED', builtins.__import__)"
    ),
    "patch_the_probe": (
        "import exhibits.tracing.probe as probe\nprobe.run = lambda ctx: None\n"
        "print('DAMAGED', probe.run)"
    ),
    "recursion_limit_50": (
        "import sys\nprint('DAMAGED', sys.getrecursionlimit())\nsys.setrecursionlimit(50)"
    ),
    "setitimer": (
        "import signal\nsignal.setitimer(signal.ITIMER_REAL, 30)\n"
        "print('DAMAGED', signal.getitimer(signal.ITIMER_REAL)[0] > 0)"
    ),
    "alarm": "import signal\nsignal.alarm(30)\nprint('DAMAGED', signal.alarm(30))",
    "an_alarm_that_would_kill_the_next_run": (
        "import os, signal\nsignal.signal(signal.SIGALRM, lambda *a: os._exit(9))\n"
        "signal.setitimer(signal.ITIMER_REAL, 2.5)\nprint('DAMAGED', signal.getsignal(14))"
    ),
    "signal_handlers": (
        "import signal\nfor s in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR2):\n"
        "    signal.signal(s, signal.SIG_IGN)\nprint('DAMAGED', signal.getsignal(15))"
    ),
    "setprofile": "import sys\nsys.setprofile(lambda *a: None)\nprint('DAMAGED', sys.getprofile())",
    "settrace": "import sys\nsys.settrace(lambda *a: None)\nprint('DAMAGED', sys.gettrace())",
    "environment": "import os\nos.environ['X'] = '1'\nprint('DAMAGED', os.environ.get('X'))",
    "chdir": "import os\nos.chdir('/proc')\nprint('DAMAGED', os.getcwd())",
    "jax_enable_x64": (
        "import jax\njax.config.update('jax_enable_x64', True)\n"
        "print('DAMAGED', jax.config.jax_enable_x64)"
    ),
    "jax_disable_jit": (
        "import jax\njax.config.update('jax_disable_jit', True)\n"
        "print('DAMAGED', jax.config.jax_disable_jit)"
    ),
    "leftover_sleeping_thread": (
        "import threading, time\nthreading.Thread(target=lambda: time.sleep(60)).start()\n"
        "print('DAMAGED', threading.active_count())"
    ),
    "leftover_spinning_daemon_thread": (
        "import threading\ndef spin():\n    while True:\n        pass\n"
        "threading.Thread(target=spin, daemon=True).start()\n"
        "print('DAMAGED', threading.active_count())"
    ),
    "module_in_sys_modules": (
        "import sys, types\nsys.modules['evil'] = types.ModuleType('evil')\n"
        "print('DAMAGED', 'evil' in sys.modules)"
    ),
    "module_on_sys_path": (
        "import sys\nopen('/tmp/evil.py', 'w').write('X = 1\\n')\nsys.path.insert(0, '/tmp')\n"
        "import evil\nprint('DAMAGED', evil.X)"
    ),
    "gc_disabled": "import gc\ngc.disable()\nprint('DAMAGED', gc.isenabled())",
    "warnings_are_errors": (
        "import warnings\nwarnings.simplefilter('error')\nprint('DAMAGED', warnings.filters[0])"
    ),
    "umask": "import os\nos.umask(0o777)\nprint('DAMAGED', oct(os.umask(0o777)))",
    "fewer_file_descriptors": (
        "import resource\nhard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))\n"
        "print('DAMAGED', resource.getrlimit(resource.RLIMIT_NOFILE))"
    ),
    "excepthooks": (
        "import sys, threading\nsys.excepthook = lambda *a: None\n"
        "threading.excepthook = lambda *a: None\nprint('DAMAGED', sys.excepthook)"
    ),
    "switch_interval": (
        "import sys\nsys.setswitchinterval(1.0)\nprint('DAMAGED', sys.getswitchinterval())"
    ),
    "int_max_str_digits": (
        "import sys\nsys.set_int_max_str_digits(640)\n"
        "print('DAMAGED', sys.get_int_max_str_digits())"
    ),
    "atexit_handler": (
        "import atexit\natexit.register(open, '/tmp/atexit', 'w')\n"
        "print('DAMAGED', atexit._ncallbacks())"
    ),
    "faulthandler_disabled": (
        "import faulthandler\nfaulthandler.disable()\nprint('DAMAGED', faulthandler.is_enabled())"
    ),
    "stdout_replaced": (
        "import io, sys\nreal = sys.stdout\nreal.write('DAMAGED\\n')\nsys.stdout = io.StringIO()"
    ),
}


@pytest.mark.parametrize("name", list(DAMAGES))
def test_a_runs_damage_does_not_reach_the_sessions_next_run(
    sandbox: SandboxHarness, fresh: dict[str, Any], name: str
) -> None:
    session = sandbox.session()
    try:
        damaging = run(sandbox, DAMAGES[name] + "\n" + OK_TAIL, session=session)
        after = run(sandbox, PROBE, session=session)
    finally:
        sandbox.call(session.close())
    # The damage was done and its run ended as an ordinary one.
    damaging.finished()
    assert "DAMAGED" in damaging.printed, damaging.printed
    seen = probe(after)
    assert {k: v for k, v in seen.items() if v != fresh.get(k)} == {}
    assert after.worker is not damaging.worker
    assert_nothing_left(damaging)
    assert_nothing_left(after)
