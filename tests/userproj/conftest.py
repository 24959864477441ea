"""The user's conftest: its own options, fixtures, and a witness of sockets opened in this process."""

import sys

import pytest

SOCKET_EVENTS: list[str] = []


def _audit(event: str, args: object) -> None:
    if event in ("socket.__new__", "socket.connect", "socket.getaddrinfo"):
        SOCKET_EVENTS.append(event)


sys.addaudithook(_audit)


def pytest_addoption(parser: pytest.Parser) -> None:
    # names a project commonly gives its own options; pytest-agentfloor must not own them
    parser.addoption("--runs", type=int, default=1, help="how often the flaky check runs")
    parser.addoption("--baseline", default="none", help="a baseline of the user's own")
    parser.addoption("--resume", action="store_true", help="the user's own resume flag")


@pytest.fixture
def runs(request: pytest.FixtureRequest) -> int:
    return request.config.getoption("--runs")


def pytest_terminal_summary(terminalreporter) -> None:
    terminalreporter.write_line(f"userproj sockets: {len(SOCKET_EVENTS)}")
