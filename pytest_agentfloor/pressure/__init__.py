"""Controlled pressures (seed 002): a deterministic compiler of matched variants.

A task family fixes what defines the correct outcome; the compiler changes one pressure at a
time (visible menu V, workflow W, returned-record encoding D, menu lane) and emits ladder-shaped
resolved cases, so play, grading and records are the episode kind's.
"""
