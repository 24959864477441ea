"""The distractor catalogue: plausible enterprise tools that do no work for any family.

Built from (system, entity) pairs and five operation shapes, each with its own description and
argument schema, so a large menu reads like a real integration catalogue. A distractor that is
called returns a well-formed result that carries nothing the task needs.
"""

from __future__ import annotations

from typing import Any

_S = {"type": "string"}

#: (system prefix, entity, plural, what the system is)
_SYSTEMS: tuple[tuple[str, str, str, str], ...] = (
    ("crm", "account", "accounts", "the customer relationship system"),
    ("hr", "employee", "employees", "the HR information system"),
    ("procurement", "requisition", "requisitions", "the procurement suite"),
    ("payroll", "payslip", "payslips", "the payroll service"),
    ("helpdesk", "ticket", "tickets", "the IT helpdesk"),
    ("inventory", "sku", "skus", "the inventory ledger"),
    ("expenses", "claim", "claims", "the expense management tool"),
    ("travel", "booking", "bookings", "the corporate travel desk"),
    ("legal", "matter", "matters", "the legal matter tracker"),
    ("marketing", "campaign", "campaigns", "the marketing automation platform"),
    ("assets", "device", "devices", "the IT asset register"),
    ("fleet", "vehicle", "vehicles", "the fleet management system"),
    ("facilities", "work_order", "work_orders", "the facilities maintenance system"),
    ("compliance", "control", "controls", "the compliance control library"),
    ("recruiting", "candidate", "candidates", "the applicant tracking system"),
    ("support", "case", "cases", "the customer support desk"),
    ("warehouse", "shipment", "shipments", "the warehouse management system"),
    ("training", "course", "courses", "the learning management system"),
    ("security", "incident", "incidents", "the security operations console"),
    ("vendors", "supplier", "suppliers", "the supplier onboarding portal"),
    ("projects", "milestone", "milestones", "the project portfolio tool"),
    ("wiki", "page", "pages", "the internal knowledge base"),
    ("surveys", "response", "responses", "the employee survey platform"),
    ("sales", "opportunity", "opportunities", "the sales pipeline"),
    ("tax", "filing", "filings", "the tax filing workspace"),
    ("treasury", "transfer", "transfers", "the treasury cash management system"),
    ("audit", "finding", "findings", "the internal audit workspace"),
    ("badges", "access_badge", "access_badges", "the physical access control system"),
)


def _shapes(system: str, entity: str, plural: str, what: str) -> list[tuple[str, str, dict[str, Any], list[str]]]:
    label = entity.replace("_", " ")
    return [
        (f"{system}_search_{plural}",
         f"Search {plural.replace('_', ' ')} in {what} by free text; returns up to 20 matches with their ids.",
         {"text": {**_S, "description": f"words to match against {label} titles and notes"},
          "limit": {"type": "integer", "description": "maximum matches to return (1-20)"}},
         ["text"]),
        (f"{system}_get_{entity}",
         f"Fetch one {label} from {what} by its {system} id, including audit metadata.",
         {f"{entity}_id": {**_S, "description": f"the {label}'s id in {what}"}},
         [f"{entity}_id"]),
        (f"{system}_list_{plural}_by_owner",
         f"List the {plural.replace('_', ' ')} in {what} owned by one person, newest first.",
         {"owner_email": {**_S, "description": "the owner's work email address"},
          "include_closed": {"type": "boolean", "description": "also list closed or archived items"}},
         ["owner_email"]),
        (f"{system}_export_{plural}",
         f"Export {plural.replace('_', ' ')} from {what} changed within a date range, as a CSV download link.",
         {"from_date": {**_S, "description": "start date, YYYY-MM-DD"},
          "to_date": {**_S, "description": "end date, YYYY-MM-DD"}},
         ["from_date", "to_date"]),
        (f"{system}_{entity}_history",
         f"Show the change history of one {label} in {what}: who changed which field and when.",
         {f"{entity}_id": {**_S, "description": f"the {label}'s id in {what}"},
          "max_events": {"type": "integer", "description": "most recent events to return"}},
         [f"{entity}_id"]),
    ]


def _schema(name: str, desc: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": desc,
        "parameters": {"type": "object", "properties": props, "required": required, "additionalProperties": False}}}


DISTRACTORS: dict[str, dict[str, Any]] = {
    name: _schema(name, desc, props, req)
    for sys in _SYSTEMS for name, desc, props, req in _shapes(*sys)
}
#: catalogue order (the compiler draws from it with a seeded permutation)
DISTRACTOR_NAMES: tuple[str, ...] = tuple(DISTRACTORS)
#: system prefix -> the plural it lists (a distractor's route collection, pressure/routes.py)
PLURALS: dict[str, str] = {sys: plural for sys, _, plural, _ in _SYSTEMS}


def distractor_result(name: str) -> dict[str, Any]:
    """Well-formed and useless: the right shape for the tool, and nothing a family needs."""
    system = name.split("_", 1)[0]
    if "_search_" in name or "_list_" in name:
        return {"status": "ok", "data": {"system": system, "items": [], "total": 0}}
    if name.endswith("_history"):
        return {"status": "ok", "data": {"system": system, "events": [], "note": "no changes recorded"}}
    if "_export_" in name:
        return {"status": "ok", "data": {"system": system, "rows": 0, "download": None}}
    return {"status": "not_found", "error_type": "not_found",
            "message": f"no such item in the {system} system", "hint": ""}
