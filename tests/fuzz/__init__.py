"""Fuzzers: structure-aware generators of hostile input and the CLI promise they check."""
