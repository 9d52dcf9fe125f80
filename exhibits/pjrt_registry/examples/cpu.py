# The CPU client: the branch that reads CPU_NUM_DEVICES (try CPU_NUM_DEVICES devices with
# dynamic plugins on or off: "CPU" never goes through the plugin table).
pjrt_device = "CPU"
dynamic_plugins = "auto"
