"""One file per scheduler; each registers itself with `register_scheduler`."""
