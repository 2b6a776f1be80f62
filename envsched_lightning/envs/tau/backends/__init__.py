"""tau-bench's tools for retail and airline over one shared database format, with upstream's strings."""
