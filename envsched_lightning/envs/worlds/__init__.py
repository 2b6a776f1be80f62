"""Built-in offline tool worlds, one per file; each registers itself with `@register_env`."""
