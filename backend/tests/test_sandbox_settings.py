"""Settings: defaults, ``JAXSCOPE_*`` environment overrides, CLI overrides, loopback detection."""

from __future__ import annotations

from pathlib import Path

import pytest
from jaxscope.settings import (
    Limits,
    default_address_space_bytes,
    is_loopback,
    settings_from_env,
)


def test_defaults() -> None:
    s = settings_from_env(env={})
    assert (s.host, s.port, s.workers, s.token, s.check_exhibits) == (
        "127.0.0.1",
        8000,
        2,
        None,
        True,
    )
    assert s.limits == Limits(
        wall_s=10.0, cpu_s=10.0, address_space_bytes=default_address_space_bytes()
    )


def test_env_then_flags() -> None:
    env = {
        "JAXSCOPE_WALL_S": "2.5",
        "JAXSCOPE_ADDRESS_SPACE_BYTES": "0",
        "JAXSCOPE_WORKERS": "4",
        "JAXSCOPE_TOKEN": "secret",
        "JAXSCOPE_CHECK_EXHIBITS": "0",
        "JAXSCOPE_FRONTEND_DIST": "/srv/dist",
    }
    s = settings_from_env(env=env, workers=1, host=None)
    assert s.limits.wall_s == 2.5 and s.limits.address_space_bytes == 0
    assert s.workers == 1  # the flag wins over the environment
    assert s.host == "127.0.0.1"  # a None flag changes nothing
    assert s.token == "secret" and s.check_exhibits is False
    assert s.frontend_dist == Path("/srv/dist")


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.5", False),
        ("example.org", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_address_space_limit_off_where_a_gpu_is_attached(tmp_path: Path) -> None:
    assert default_address_space_bytes(tmp_path / "absent") == 3 * 2**30
    fake = tmp_path / "nvidiactl"
    fake.touch()
    assert default_address_space_bytes(fake) == 0


def test_autodiff_exhibits_get_a_larger_run_budget() -> None:
    """The AD exhibits trace, compile and run f several times: their wall/CPU limits scale."""
    from exhibits.registry import EXHIBITS, run_budget

    assert run_budget("tracing") == 1.0
    assert run_budget("no-such-exhibit") == 1.0
    for exhibit in ("jvp", "partial_eval", "transpose", "custom_vjp", "nan_finder"):
        assert run_budget(exhibit) == EXHIBITS[exhibit].budget > 1.0


def test_no_address_space_limit_where_a_tpu_is_attached(tmp_path: Path) -> None:
    """libtpu, like CUDA, reserves more address space than 3 GiB (a worker stalled in
    make_tpu_client on the lent TPU v5e host): its chip's node lifts the default limit."""
    absent = tmp_path / "nvidiactl"
    (tmp_path / "vfio").mkdir()
    (tmp_path / "vfio" / "vfio").touch()  # the vfio control node alone is no chip
    assert default_address_space_bytes(absent, dev=tmp_path) == 3 * 2**30
    (tmp_path / "vfio" / "3").touch()  # the chip seen on the lent host
    assert default_address_space_bytes(absent, dev=tmp_path) == 0
    other = tmp_path / "other"
    other.mkdir()
    (other / "accel0").touch()
    assert default_address_space_bytes(absent, dev=other) == 0
