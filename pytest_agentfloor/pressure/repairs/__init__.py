"""Repairs (seed 002, second half): does fixing the harness help more under its pressure than
without it, and does it beat switching the configuration? Pure functions of paired outcomes:
the repair quantities and activation rule (`quantities`), sentinel repeats (`repeats`), the
probe-then-repair policy (`policy`) and repairs versus configuration switches (`switches`)."""
