"""The LLM judge of the semantic predicates (issue 12): prompt, strict parsing, cache, audit.

The predicate ids and rubrics are case data (suite/predicates.py); nothing here loads a client
until a judge is configured.
"""
