# A device string torch_xla 2.9.0 does not know. With dynamic plugins on (torch_xla's import
# turns them on), pjrt_registry.cpp asks its plugin table and fails there; switch them off and
# the if/else-if chain falls through to its last `else`.
pjrt_device = "FOO"
dynamic_plugins = "on"
