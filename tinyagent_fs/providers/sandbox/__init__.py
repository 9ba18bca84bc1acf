"""Kernel confinement for the sandboxed worker: Landlock rules, a seccomp filter,
read-only mounts for paths that must not change, and a probe of what the running
system supports. Only the worker applies these; the toolkit process never is."""
