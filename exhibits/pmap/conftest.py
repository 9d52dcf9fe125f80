"""The pmap tests need 8 CPU devices, as the workers have: the flag is added to
``XLA_FLAGS`` at collection, before any test creates JAX's CPU backend (which reads it once)."""

import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
    ).strip()
