"""The pjrt_registry exhibit (PyTorch/XLA track): which branch of torch_xla's
``pjrt_registry.cpp`` (v2.9.0) a ``PJRT_DEVICE`` string takes, one fresh client per run."""
