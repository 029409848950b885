"""Benchmarks as plugins: one module or package per benchmark (`base.Benchmark`), found through `registry`.
See docs/DESIGN.md "Benchmark plugins"."""
