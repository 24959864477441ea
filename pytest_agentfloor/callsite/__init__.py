"""Call-site cases (seed 001): one model request per case, graded by one of five output contracts.

A deployed agent issues structurally different calls (route intent, classify an action, ground
language in a device registry, plan a pipeline, write agent code); each is evaluated on its own so
each can be given the cheapest model that serves it.
"""

SITES: tuple[str, ...] = ("intent", "action_label", "actuator", "planner", "codegen")
#: sites whose output is generated text (a plan, a program) rather than a label or a short object
GENERATIVE_SITES: tuple[str, ...] = ("planner", "codegen")
