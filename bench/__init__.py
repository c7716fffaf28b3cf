"""Benchmarks for the speed targets; `make bench` runs them and prints the figures."""
