"""Context windows: how much an episode needs, and how a prompt the server cut is recognised.

A server that cuts a prompt to fit its window (Ollama does it silently, from the front, so the
system prompt goes first) would have the model graded on a conversation it never saw whole.
The cut shows in the usage figures: the prompt's token count stops growing although messages
were added, or it reaches the window. Both are checked on every turn (`prompt_cut`); a 400
"context length exceeded" is recognised from its text (`providers.base.is_context_overflow`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .protocol import Protocol

#: what one episode needs besides its turns: system prompt, the full tool menu, the task prompt
CONTEXT_BASE_TOKENS = 1536
#: per model turn: a tool call, its arguments and the sandbox's result
CONTEXT_TURN_TOKENS = 384
#: the longest turn budget of the ladder (tier E's per-task budgets, the authors' 12 on E4 and E5; a test
#: checks it against cases/)
LADDER_MAX_TURNS = 12
#: the largest call limit of the ladder's cases (E1's 16; a test checks it against cases/)
LADDER_MAX_CALL_LIMIT = 16
#: the default upper bound of an automatically sized Ollama context (server memory grows with it)
DEFAULT_CONTEXT_MAX = 32768
#: a prompt count that falls below this share of the previous one is a cache report, not a cut
_PLATEAU_SHARE = 0.9


def context_need(turns: int, max_tokens: int) -> int:
    """Tokens an episode of `turns` model turns may fill, its last completion (the cap) included,
    rounded up to a multiple of 1024.

    The longest oracle episode of the ladder is about 9,000 characters of messages and tool
    schemas (about 3,000 tokens); the allowance per turn covers models that use every turn.
    """
    need = CONTEXT_BASE_TOKENS + max(0, turns) * CONTEXT_TURN_TOKENS + max_tokens
    return -(-need // 1024) * 1024


def session_turns(protocol: "Protocol | None") -> int:
    """The longest episode of the ladder, in model turns, under `protocol` (None: the tier budgets).

    One number per session, so every request (and every xdist worker) sends the same window and
    Ollama never reloads the model between them.
    """
    if protocol is None:
        return LADDER_MAX_TURNS
    if protocol.turn_limit == "calls+2":
        return LADDER_MAX_CALL_LIMIT + 2
    return max(1, math.ceil(LADDER_MAX_TURNS * protocol.step_budget_scale))


def prompt_cut(tokens_in: int, previous_in: int | None, window: int | None, *,
               tokens_out: int = 0, finish_reason: str = "stop") -> str | None:
    """Why this turn's prompt was evidently cut by the server, or None.

    `previous_in` is the prompt count of the previous turn (None on the first turn); every turn
    after the first adds at least the model's call and a tool result, so a legitimate count grows.
    Some servers count only the tokens they did not have cached, so a count that stops growing
    is taken as a cut only in the upper half of a known window, and a count far below the
    previous one never is. Without a known window only a 400 reveals an overflow.
    """
    if tokens_in <= 0 or not window:
        return None  # no usage figures, or no window to compare with
    if tokens_in >= window:
        return f"the prompt filled the {window}-token context window ({tokens_in} prompt tokens)"
    if finish_reason == "length" and tokens_in + tokens_out >= window:
        return (f"the reply ran into the end of the {window}-token context window "
                f"({tokens_in} prompt + {tokens_out} completion tokens)")
    if (previous_in and previous_in * _PLATEAU_SHARE <= tokens_in <= previous_in
            and tokens_in * 2 >= window):
        return (f"the prompt stopped growing near the {window}-token context window ({previous_in} then "
                f"{tokens_in} tokens) although messages were added: the server cut it to fit")
    return None
