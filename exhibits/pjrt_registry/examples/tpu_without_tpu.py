# TPU on a machine without one: with dynamic plugins on, the TPU plugin (Python) is asked for
# its library and raises; off, the built-in TPU branch tries to open libtpu.so itself.
pjrt_device = "TPU"
dynamic_plugins = "off"
