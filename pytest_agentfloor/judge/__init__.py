"""The LLM judge of the semantic predicates (issue 12): prompt, strict parsing, cache, audit.

Kept import-light: the case schema imports `predicates`, and nothing here loads a client
until a judge is configured.
"""
