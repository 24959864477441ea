"""Pydantic models of call-site data: installations (entity registries) and site tables of cases.

A site table is one TOML file (``kind = "callsite"``) holding the site's own system prompt, its
grader and many cases; each case becomes an item. An installation file (``kind = "installation"``)
holds data only: the entities a site owns and the agents already running there.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Site = Literal["intent", "action_label", "actuator", "planner", "codegen"]
#: how a deployment reads a call site's reply (callsite/parsers.py, docs/callsite.md "Output parsers")
ParserName = Literal["deployed", "strict", "harness"]
CROSS_SITE: tuple[str, ...] = ("control", "flip", "nearmiss", "refusal", "same")
NAMING: tuple[str, ...] = ("name", "location", "name_location", "attribute", "switch", "multi", "refusal")
AGENT_FUNCTIONS: dict[str, int] = {"setup": 1, "process": 1, "handle_task": 2, "cleanup": 1}
#: a registry's entity id as Home Assistant shows it: a domain, a dot, an object id (any case, digits,
#: further dots: ``sensor.22101316g_battery``, ``update.zbt_2_0000005E0053_firmware``); always fullmatch:
#: "$" would let a trailing newline in
_ENTITY = re.compile(r"[A-Za-z0-9_]+\.[A-Za-z0-9_.\-]+")
_ID = re.compile(r"[A-Za-z0-9_.-]+")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _json_text(v: Any) -> Any:
    """A field a captured case file may hold as JSON text (TOML has no null; captures do)."""
    if isinstance(v, str):
        import json

        try:
            return json.loads(v)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON ({exc.msg} at char {exc.pos})") from None
    return v


class Entity(_Strict):
    id: str
    name: str
    area: str = ""
    attributes: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _entity_id(cls, v: str) -> str:
        if not _ENTITY.fullmatch(v):
            raise ValueError(f"entity id {v!r} must look like domain.object_id (letters, digits, '_', '.', '-')")
        return v


class RunningAgent(_Strict):
    name: str
    description: str = ""
    publishes: list[str] = Field(default_factory=list)
    fields: list[str] = Field(default_factory=list, description="payload field names of what it publishes")


class Installation(_Strict):
    """One site's inventory: what its registry lists and which agents already run there."""

    id: str = Field(description="marker name of the installation, e.g. site_a")
    name: str
    entities: list[Entity]
    agents: list[RunningAgent] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique(self) -> "Installation":
        ids = [e.id for e in self.entities]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"entity id(s) listed twice: {dup}")
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.id):
            raise ValueError(f"installation id {self.id!r} must be a lower-case marker name")
        return self

    def entity_ids(self) -> frozenset[str]:
        return frozenset(e.id for e in self.entities)

    def topics(self) -> frozenset[str]:
        return frozenset(t for a in self.agents for t in a.publishes)

    def registry_text(self) -> str:
        """The registry as appended to the prompt: one entity id and friendly name per line."""
        return "\n".join(f"{e.id}: {e.name}" + (f" ({e.area})" if e.area else "")
                         + "".join(f"; {k}={v}" for k, v in sorted(e.attributes.items()))
                         for e in self.entities)

    def agents_text(self) -> str:
        if not self.agents:
            return "(none)"
        return "\n".join(f"{a.name}: {a.description} publishes {', '.join(a.publishes) or '-'}"
                         + (f" fields {', '.join(a.fields)}" if a.fields else "") for a in self.agents)


class Action(_Strict):
    """One gold service call. ``entity_id_any``: one device registered under several ids, any is right.

    ``service_data`` absent: the deployed and harness parsers leave it unconstrained, the strict one
    requires none. Given: the deployed parser checks only its keys, the strict and harness ones the whole
    object; with ``service_data_exact`` all compare the whole object (``{}`` then means "no service data").
    """

    domain: str
    service: str
    entity_id: str | None = None
    entity_id_any: list[str] | None = None
    service_data: dict[str, Any] | None = None
    service_data_exact: bool = False

    @model_validator(mode="after")
    def _one_id(self) -> "Action":
        if (self.entity_id is None) == (self.entity_id_any is None):
            raise ValueError("give exactly one of entity_id and entity_id_any")
        if self.entity_id_any is not None and not self.entity_id_any:
            raise ValueError("entity_id_any must list at least one entity id")
        for e in self.ids():
            if not _ENTITY.fullmatch(e):
                raise ValueError(f"entity id {e!r} must look like domain.object_id (letters, digits, '_', '.', '-')")
        return self

    def ids(self) -> tuple[str, ...]:
        """The entity ids that satisfy this call (one, or the alternatives of one device)."""
        return (self.entity_id,) if self.entity_id is not None else tuple(self.entity_id_any or ())

    def example(self) -> dict[str, Any]:
        """A call that satisfies this gold under both parsers (the first alternative)."""
        out: dict[str, Any] = {"domain": self.domain, "service": self.service, "entity_id": self.ids()[0]}
        if self.service_data:
            out["service_data"] = self.service_data
        return out


Token = str | list[str]
"""A string the serialized output must (not) contain; a list: any one of them (one device, several ids)."""


class PlannerGold(_Strict):
    """What a plan must do. ``refuse``: an infeasible request, whose plan must be ``[]`` (seed 001). With it,
    ``allowed_types``, ``must_contain`` and ``must_not_contain`` may still be given: they are the plan the
    authors' harness passes on such a case (the ``harness`` parser grades by them; the others ignore them).
    """

    refuse: bool = Field(False, description="the site cannot support the pipeline: the plan must be [] "
                                            "(the harness parser: a plan of allowed_types avoiding must_not_contain)")
    entities: list[str] = Field(default_factory=list, description="entity ids the plan must use")
    allowed_types: list[str] | None = Field(None, description="step types the plan may use (default: all three)")
    must_contain: list[Token] = Field(default_factory=list,
                                      description="strings the plan must contain (case-insensitive); a list: any one")
    must_not_contain: list[Token] = Field(default_factory=list,
                                          description="strings the plan must not contain (case-insensitive)")
    delegates: list[str] = Field(default_factory=list, description="running agents the plan must hand work to, by name")
    topics: list[str] = Field(default_factory=list, description="existing topics the plan must subscribe to")
    types: list[str] = Field(default_factory=list, description="step types the plan must contain")
    forbid_types: list[str] = Field(default_factory=list, description="step types the plan must not contain")
    schedule: dict[str, Any] | None = Field(None, description="fields a scheduled step's schedule must carry")
    max_steps: int | None = None

    @model_validator(mode="after")
    def _refusal_keys(self) -> "PlannerGold":
        if self.refuse:
            extra = [k for k in ("entities", "delegates", "topics", "types", "forbid_types", "schedule", "max_steps")
                     if getattr(self, k)]
            if extra:
                raise ValueError(f"refuse = true takes only allowed_types, must_contain and must_not_contain "
                                 f"(what the harness parser checks); got {', '.join(extra)}")
        return self


class CodegenGold(_Strict):
    functions: list[str] = Field(description="async functions the code must define")
    uses: list[str] = Field(default_factory=list,
                            description="API names the code must call, e.g. agent.subscribe, run_in_executor")
    must_contain: list[str] = Field(default_factory=list,
                                    description="strings the code must contain (case-insensitive)")
    must_not_contain: list[str] = Field(default_factory=list, description="strings the code must not contain")
    allow_empty_bodies: bool = Field(False, description="deployed parser: a required function may be a stub")

    @field_validator("functions")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        bad = [f for f in v if f not in AGENT_FUNCTIONS]
        if bad or not v:
            raise ValueError(f"functions must be a non-empty subset of {', '.join(AGENT_FUNCTIONS)}; got {v}")
        return v


#: a captured reference's review (capture review): provisional = the production reply, unreviewed and not
#: counted in the statistics; accepted / edited = counted; dropped = kept in the file (so a re-review and
#: ``capture cases`` remember it) but never collected
REVIEW_STATES: tuple[str, ...] = ("provisional", "accepted", "edited", "dropped")


class Provenance(_Strict):
    """Where a captured case came from (``capture cases``, docs/capture.md)."""

    site: str
    first_seen: str = Field(description="time of the first captured call (UTC, ISO 8601)")
    last_seen: str
    count: int = Field(ge=1, description="how often the agent made this request: the captured call mix")
    upstream_model: str | None = Field(None, description="the model that answered, as its reply named it")
    upstream_models: list[str] = Field(default_factory=list, description="every model that answered it")
    request_model: str | None = None
    api: str | None = None
    replies_seen: int = Field(1, ge=1, description="distinct replies to this request; the commonest is the reference")
    request_hash: str = Field(description="sha256 of the system prompt, messages and tools")
    params: dict[str, Any] = Field(default_factory=dict, description="the request's other fields (temperature, ...)")
    production_reply: str | None = Field(
        None, description="the production reply, kept when a reviewer edited the reference (capture review)")

    _params = field_validator("params", mode="before")(classmethod(lambda cls, v: _json_text(v)))


class JudgeLabel(_Strict):
    """A judge model's pre-label of a captured reference (``capture review --agentfloor-judge``): advice to the
    reviewer, never a review; the case stays provisional until a person accepts or edits it."""

    verdict: Literal["pass", "fail"] = Field(description="the judge's verdict on the production reply")
    reason: str
    judge: str = Field(description="the judge model's name in models.toml")
    fingerprint: str = Field(description="the judge configuration's public fingerprint (judge/client.py)")
    prompt: str = Field(description="the versions of the judge prompt and of the pre-label framing")


class SiteCase(_Strict):
    """One case of a site table; exactly the gold field of the table's grader is set."""

    id: str | None = Field(None, description="defaults to <site>-<group>-<nn>, numbered within the group")
    group: str = Field(description="sub-group (Appendix C of seed 001), part of the id and a marker")
    prompt: str = Field(description="the user turn")
    installation: str | None = None
    naming: str | None = Field(None, description="actuator: how the device is named")
    label: str | None = None
    actions: list[Action] | None = None
    plan: PlannerGold | None = None
    code: CodegenGold | None = None
    reference: str | None = Field(None, description="an output that passes; derived from the gold where possible")
    messages: list[dict[str, Any]] | None = Field(
        None, description="the whole conversation after the system prompt, as captured (prompt: its last user turn)")
    review: Literal["provisional", "accepted", "edited", "dropped"] | None = Field(
        None, description="a captured reference's review state; provisional: the production reply, unreviewed "
        "(not counted in the statistics); dropped: never collected")
    provenance: Provenance | None = None
    judge: JudgeLabel | None = Field(None, description="captured: a judge model's pre-label of the production "
                                     "reply (capture review --agentfloor-judge); never counted as a review")

    _messages = field_validator("messages", mode="before")(classmethod(lambda cls, v: _json_text(v)))

    @field_validator("group")
    @classmethod
    def _group(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", v):
            raise ValueError(f"group {v!r} must be a lower-case marker name")
        return v

    @field_validator("id")
    @classmethod
    def _id(cls, v: str | None) -> str | None:
        if v is not None and not _ID.fullmatch(v):
            raise ValueError(f"case id {v!r} may hold only letters, digits, '_', '.' and '-'")
        return v

    @field_validator("naming")
    @classmethod
    def _naming(cls, v: str | None) -> str | None:
        if v is not None and v not in NAMING:
            raise ValueError(f"naming {v!r} is not one of {', '.join(NAMING)}")
        return v


class SiteTable(_Strict):
    """A site table file: one call site, its prompt and grader, many cases."""

    site: str = Field(description="call-site name; the marker and the id prefix")
    grader: str = Field(description="intent, action_label, actuator, planner, codegen or a registered grader")
    system_prompt: str
    labels: list[str] = Field(default_factory=list, description="label graders: the valid labels")
    max_tokens: int | None = Field(None, gt=0, description="completion cap of this call (intent: 10)")
    parser: ParserName | None = Field(
        None, description="how the deployment reads the reply; unset: --agentfloor-callsite-parser, else deployed")
    installation: str | None = Field(None, description="default installation of the cases")
    installations_dir: str = Field("installations", description="where installation files live, relative")
    tools: list[dict[str, Any]] = Field(default_factory=list,
                                        description="tool schemas offered with every case (OpenAI function format)")
    site_calls: int | None = Field(
        None, ge=1, description="captured: how often the agent called this site in the capture (every table of "
        "the site holds the same number); the routing weights sites by it (docs/capture.md)")
    cases: list[SiteCase] = Field(alias="case")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    _tools = field_validator("tools", mode="before")(classmethod(lambda cls, v: _json_text(v)))

    @field_validator("site")
    @classmethod
    def _site(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", v):
            raise ValueError(f"site {v!r} must be a lower-case marker name")
        return v

    @model_validator(mode="after")
    def _coherent(self) -> "SiteTable":
        builtin_gold = {"intent": "label", "action_label": "label", "actuator": "actions", "planner": "plan",
                        "codegen": "code"}
        if self.grader in ("intent", "action_label") and not self.labels:
            raise ValueError(f"grader {self.grader!r} needs 'labels' (the valid label set)")
        for n, case in enumerate(self.cases):
            where = f"case[{n}]" + (f" ({case.id})" if case.id else "")
            need = builtin_gold.get(self.grader)
            if need and getattr(case, need) is None:
                raise ValueError(f"{where}: grader {self.grader!r} needs '{need}'")
            if need == "label" and case.label not in self.labels:
                raise ValueError(f"{where}: label {case.label!r} is not in labels {self.labels}")
            if self.grader in ("actuator", "planner") and not (case.installation or self.installation):
                raise ValueError(f"{where}: grader {self.grader!r} needs an 'installation'")
        return self


def _is_calls(text: str) -> bool:
    """Is a reference the tool-call list a captured tool call is stored as ([{"name", "arguments"}])?"""
    import json

    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) and "name" in v for v in value)


class CallSiteCase(BaseModel):
    """One resolved call-site case: what a single request sends and what its grader checks."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["callsite"] = "callsite"
    id: str
    site: str
    grader: str
    group: str
    tier: str = "callsite"
    variant: str = "v0"
    instance: str = "i0"
    tools: tuple[str, ...] = ()
    system_prompt: str
    prompt: str
    context: str = Field("", description="appended to the user turn at call time (registry, agents)")
    labels: tuple[str, ...] = ()
    max_tokens: int | None = None
    parser: ParserName | None = Field(None, description="None: the session's default (deployed)")
    installation: Installation | None = None
    naming: str | None = None
    label: str | None = None
    actions: tuple[Action, ...] | None = None
    plan: PlannerGold | None = None
    code: CodegenGold | None = None
    reference: str
    content_hash: str
    messages_json: str | None = Field(None, description="JSON of the conversation after the system prompt")
    tools_json: str | None = Field(None, description="JSON of the tool schemas offered")
    review: str | None = None
    calls: int | None = Field(None, description="captured: how often the agent made this request")
    site_calls: int | None = Field(None, description="captured: how often the agent called this site")

    def conversation(self) -> list[dict[str, Any]]:
        """The request's messages: the system prompt (when set) and the captured turns, or the user turn."""
        import json

        head = [{"role": "system", "content": self.system_prompt}] if self.system_prompt or not self.messages_json else []
        if self.messages_json:
            return head + list(json.loads(self.messages_json))
        return head + [{"role": "user", "content": self.user_message}]

    def tool_schemas(self) -> list[dict[str, Any]]:
        import json

        return list(json.loads(self.tools_json)) if self.tools_json else []

    @property
    def parser_name(self) -> str:
        """The output parser the graders read the reply with."""
        return self.parser or "deployed"

    @property
    def user_message(self) -> str:
        return self.prompt + (f"\n\n{self.context}" if self.context else "")

    @property
    def cross_site(self) -> str | None:
        """The actuator cross-site sub-group (control, flip, nearmiss, refusal, same), if any."""
        tail = self.group.rsplit("_", 1)[-1]
        return tail if self.grader == "actuator" and tail in CROSS_SITE else None

    @property
    def actionable(self) -> bool | None:
        return None if self.actions is None else bool(self.actions)

    def scripted_output(self, policy: str) -> str:
        """What a scripted policy answers (callsite.policies), through the seam every kind's case uses,
        so the core's scripted provider imports no kind package."""
        from .policies import callsite_output

        return callsite_output(policy, self)

    def facets(self) -> dict[str, Any]:
        """What the case says about itself, carried by every record of it."""
        out: dict[str, Any] = {"site": self.site, "grader": self.grader, "group": self.group,
                               "installation": self.installation.id if self.installation else None,
                               "naming": self.naming, "cross_site": self.cross_site, "actionable": self.actionable,
                               "parser": self.parser_name}
        if self.review is not None:  # captured cases only: existing records keep their shape
            out["review"] = self.review
            out["calls"] = self.calls
            out["site_calls"] = self.site_calls
            if self.tools_json:  # a site that can act: did the production reply act (call a tool)?
                out["actionable"] = self.reference.lstrip().startswith("[") and _is_calls(self.reference)
        return out
