"""Regression tests from the break-it review of a running server (issue 12, point 6): hostile
frames, cancels, control characters, host callbacks, tokens and CLI input."""
