# The comparison is exact: "cpu" is not "CPU".
pjrt_device = "cpu"
dynamic_plugins = "on"
