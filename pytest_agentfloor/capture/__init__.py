"""Capture: a recording proxy in front of a running agent's model, and call-site cases from what it saw.

``python -m pytest_agentfloor capture --upstream URL`` (:mod:`.command`) forwards every OpenAI chat
completions and Ollama ``/api/chat`` request unchanged (:mod:`.proxy`), reads each request and its
reply (:mod:`.wire`), assigns it a call site (:mod:`.sites`), removes secrets (:mod:`.redact`) and
appends one line per pair to a JSONL per site (:mod:`.store`). ``capture cases`` turns those lines
into call-site tables of the existing kind (:mod:`.cases`). docs/capture.md is the user's guide.
"""
