"""The FastAPI server in process (TestClient, real worker pool): health, catalogue, websocket
round trip, origin and token checks, oversized requests, headers, the startup exhibit check."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import jax
import pytest
from fastapi.testclient import TestClient
from jaxscope.protocol import Catalogue, DetailFailed, JaxprStaged, RunFailed
from jaxscope.sandbox.request_loop import MAX_PENDING_DETAILS
from jaxscope.sandbox.snippet import load_snippet
from jaxscope.server import catalogue as catalogue_module
from jaxscope.server.app import create_app
from jaxscope.server.catalogue import IncompleteExhibit
from jaxscope.settings import Limits, Settings, default_address_space_bytes
from starlette.websockets import WebSocketDisconnect

from exhibits.registry import EXHIBITS, Exhibit, real_program_paths
from tests.harness import REPO, collect, next_event, run_msg

SIN = "import jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x) * 2.0\nargs = (jnp.ones(3),)\n"

# The exhibit-completeness check has its own test below; here the server must come up even while
# the other parts of the exhibits (golden files, views) are still being written.
BASE = "http://localhost:8000"
WS = "ws://localhost:8000/api/ws"  # TestClient's websockets ignore base_url
SETTINGS = Settings(workers=1, limits=Limits(wall_s=10.0), check_exhibits=False)


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app(SETTINGS), base_url=BASE) as c:
        yield c


def test_health(client: TestClient) -> None:
    r = client.get("/api/health")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok"
    assert body["jax_version"] == importlib.metadata.version("jax") == jax.__version__
    assert set(body["pool"]) >= {"size", "idle", "starting"}
    assert body["pool"]["size"] == 1
    assert body["limits"]["wall_s"] == 10.0
    assert body["limits"]["address_space_bytes"] == default_address_space_bytes()
    assert r.headers["x-content-type-options"] == "nosniff"


def test_server_process_never_imports_jax() -> None:
    code = (
        "import sys\n"
        "from fastapi.testclient import TestClient\n"
        "from jaxscope.server.app import create_app\n"
        "from jaxscope.settings import Settings\n"
        "app = create_app(Settings(workers=0, check_exhibits=False))\n"
        "c = TestClient(app, base_url='http://127.0.0.1')\n"
        "assert c.get('/api/health').json()['jax_version']\n"
        "assert c.get('/api/exhibits').status_code == 200\n"
        "print(sorted(m for m in sys.modules if m == 'jax' or m.startswith('jax.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]"


def test_exhibits_catalogue(client: TestClient) -> None:
    r = client.get("/api/exhibits")
    assert r.status_code == 200
    cat = Catalogue.model_validate(r.json())
    assert [e.id for e in cat.exhibits] == list(EXHIBITS)
    for info in cat.exhibits:
        assert info.artefacts == list(EXHIBITS[info.id].artefacts)
        assert info.examples == sorted(EXHIBITS[info.id].example_paths())
    expected = {
        f"{e.id}/{stem}": path
        for e in EXHIBITS.values()
        for stem, path in e.example_paths().items()
    }
    # The real programs the pickers offer (design 0048), once each.
    expected |= {f"real/{stem}": path for stem, path in real_program_paths().items()}
    assert sorted(cat.examples) == sorted(expected)
    for key, path in expected.items():
        assert cat.examples[key] == path.read_text()
    # Every example file in the repository is offered by at least its own exhibit.
    for path in REPO.glob("exhibits/*/examples/*.py"):
        if path.parent.parent.name.startswith("_"):  # the template is registered nowhere
            continue
        assert cat.examples[f"{path.parent.parent.name}/{path.stem}"] == path.read_text()


def test_websocket_round_trip(client: TestClient) -> None:
    with client.websocket_connect(WS) as ws:
        ws.send_text(run_msg("rt-1", SIN))
        events = collect(ws, "rt-1")
    types = [e.type for e in events]
    assert types[0] == "run_started"
    assert "jaxpr_staged" in types
    assert types[-1] == "run_finished"
    assert [e.seq for e in events] == list(range(len(events)))
    staged = next(e for e in events if isinstance(e, JaxprStaged))
    snippet = load_snippet(SIN)
    assert staged.jaxpr.text == str(jax.make_jaxpr(snippet.f)(*snippet.args))


@pytest.mark.parametrize(
    ("expr", "message", "during", "explained"),
    [
        (
            "(1/0,)",
            "division by zero",
            "while evaluating the arguments you typed for call #1",
            "Evaluating the arguments you typed for call #1 (`(1/0,)`) raised ZeroDivisionError.",
        ),
        (
            "(jnp.ones(3)",
            "'(' was never closed (<typed arguments>, line 1)",
            "while reading the arguments you typed for call #1",
            "The arguments you typed for call #1 (`(jnp.ones(3)`) are not valid Python",
        ),
    ],
)
def test_typed_call_arguments_are_blamed_over_the_websocket(
    client: TestClient, expr: str, message: str, during: str, explained: str
) -> None:
    # The "call again" expression's failure, through the worker pool and the websocket: it
    # names the typed arguments, not a line of the snippet (break-it review s11).
    request = json.loads(run_msg("typed-1", SIN))
    request["options"] = {"calls": [{"change": "expr", "expr": expr}]}
    with client.websocket_connect(WS) as ws:
        ws.send_text(json.dumps(request))
        events = collect(ws, "typed-1")
    failed = events[-1]
    assert isinstance(failed, RunFailed)
    assert (failed.message, failed.during, failed.source) == (message, during, None)
    assert failed.explanation is not None and failed.explanation.startswith(explained)
    assert "no line of the snippet is at fault" in failed.explanation


def test_origin_checked(client: TestClient) -> None:
    with pytest.raises(WebSocketDisconnect) as info:
        with client.websocket_connect(WS, headers={"origin": "http://evil.example"}):
            pass
    assert info.value.code == 1008
    with client.websocket_connect(WS, headers={"origin": BASE}) as ws:
        ws.send_text(json.dumps({"type": "cancel", "run_id": "nothing"}))


def test_oversized_paste_then_session_still_works(client: TestClient) -> None:
    with client.websocket_connect(WS) as ws:
        ws.send_text(run_msg("big", "x = 1\n" * (10 * 2**20 // 6)))
        (failed,) = collect(ws, "big")
        assert isinstance(failed, RunFailed)
        assert failed.kind == "invalid_request"
        assert "at most" in failed.message
        ws.send_text(run_msg("after", SIN))
        assert collect(ws, "after")[-1].type == "run_finished"


def test_bad_requests_get_invalid_request(client: TestClient) -> None:
    with client.websocket_connect(WS) as ws:
        ws.send_text("{not json")
        bad = next_event(ws)
        assert isinstance(bad, RunFailed) and bad.kind == "invalid_request"
        ws.send_text(json.dumps({"type": "run", "run_id": "r9", "exhibit": "tracing"}))
        bad = next_event(ws)
        assert isinstance(bad, RunFailed) and bad.kind == "invalid_request"
        assert bad.run_id == "r9" and "code" in bad.message
        ws.send_text(run_msg("r10", SIN, exhibit="nope"))
        (bad,) = collect(ws, "r10")
        assert isinstance(bad, RunFailed) and "unknown exhibit" in bad.message


def test_new_run_cancels_previous(client: TestClient) -> None:
    with client.websocket_connect(WS) as ws:
        ws.send_text(run_msg("slow", "while True:\n    pass\n"))
        first = next_event(ws)  # run_started of "slow"
        assert first.run_id == "slow"
        ws.send_text(run_msg("fast", SIN))
        slow = [first, *collect(ws, "slow")]
        assert isinstance(slow[-1], RunFailed) and slow[-1].kind == "cancelled"
        assert collect(ws, "fast")[-1].type == "run_finished"


def test_dns_rebinding_refused(client: TestClient) -> None:
    # A page on evil.example whose name was re-pointed at 127.0.0.1 sends Host: evil.example.
    r = client.get("/api/health", headers={"host": "evil.example:8000"})
    assert r.status_code == 403
    with pytest.raises(WebSocketDisconnect) as info:
        with client.websocket_connect(
            "/api/ws", headers={"host": "evil.example:8000", "origin": "http://evil.example:8000"}
        ):
            pass
    assert info.value.code == 1008
    for host in ("127.0.0.1:8000", "localhost", "[::1]:8000"):
        assert client.get("/api/health", headers={"host": host}).status_code == 200


def test_html_headers(client: TestClient) -> None:
    r = client.get("/")
    assert r.status_code == 200
    csp = r.headers["content-security-policy"]
    for directive in (
        "default-src 'self'",
        "connect-src 'self' ws://localhost:8000",
        "object-src 'none'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ):
        assert directive in csp
    assert r.headers["x-content-type-options"] == "nosniff"


def test_frontend_not_built_page(tmp_path: Path) -> None:
    app = create_app(Settings(workers=0, check_exhibits=False, frontend_dist=tmp_path / "missing"))
    with TestClient(app, base_url=BASE) as c:
        r = c.get("/")
        assert r.status_code == 200 and "frontend is not built" in r.text


def test_token_required_on_non_loopback() -> None:
    app = create_app(Settings(host="0.0.0.0", workers=0, check_exhibits=False))
    token = app.state.settings.token
    assert token and len(token) >= 20  # generated
    with TestClient(app) as c:
        assert c.get("/api/health").status_code == 401
        assert c.get("/api/exhibits?token=wrong").status_code == 401
        r = c.get(f"/api/health?token={token}")
        assert r.status_code == 200
        assert "jaxscope_token" in r.headers["set-cookie"]
        assert c.get("/api/health").status_code == 200  # the cookie now carries it
        c.cookies.clear()
        origin = {"origin": "http://testserver"}
        for url, headers in [
            ("/api/ws", origin),  # no token
            (f"/api/ws?token={token}", {}),  # no Origin: refused off loopback
            (f"/api/ws?token={token}", {"origin": "http://evil.example"}),
        ]:
            with pytest.raises(WebSocketDisconnect) as info:
                with c.websocket_connect(url, headers=headers):
                    pass
            assert info.value.code == 1008
        with c.websocket_connect(f"/api/ws?token={token}", headers=origin) as ws:
            ws.send_text("{}")
            bad = next_event(ws)
            assert isinstance(bad, RunFailed) and bad.kind == "invalid_request"


def test_startup_fails_on_incomplete_exhibit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = Exhibit(id="half", title="Half", summary="", default_example="x")
    monkeypatch.setattr(catalogue_module, "EXHIBITS", {"half": fake})
    with pytest.raises(IncompleteExhibit, match=r"exhibits/half/ lacks probe.py"):
        create_app(Settings(workers=0))


def test_a_detail_request_over_the_websocket(client: TestClient) -> None:
    """A page's run (details on demand) streams summaries; a ``detail`` request gets the whole
    event back with the summary's seq; a detail of an unknown run is answered as gone."""
    with client.websocket_connect(WS) as ws:
        request = json.loads(run_msg("dd-1", SIN, exhibit="transpose"))
        ws.send_text(json.dumps(request | {"details": "on_demand"}))
        events = collect(ws, "dd-1")
        assert events[-1].type == "run_finished", events[-1]
        summary = next(e for e in events if e.detail_id is not None)
        ask = {"type": "detail", "run_id": "dd-1", "detail_id": summary.detail_id}
        ws.send_text(json.dumps(ask))
        whole = next_event(ws)
        assert whole.type == summary.type and whole.seq == summary.seq
        assert whole.detail_of == summary.detail_id and whole.detail_id is None
        # Whole, it holds the values the summary left out (a step's values are computed when
        # the page asks: design 0068), so it is larger unless they were not computed yet.
        deferred = '"deferred":true' in summary.model_dump_json()
        assert deferred or len(whole.model_dump_json()) > len(summary.model_dump_json())
        assert '"deferred":true' not in whole.model_dump_json()
        ws.send_text(json.dumps(ask | {"run_id": "no-such-run"}))
        gone = next_event(ws)
        assert isinstance(gone, DetailFailed) and gone.run_id == "no-such-run"
        assert gone.gone and "run again" in gone.message
        assert not gone.transient and "transient" not in gone.model_dump_json()


def test_a_flood_of_detail_requests_is_refused_as_transient(client: TestClient) -> None:
    """Past ``MAX_PENDING_DETAILS`` waiting detail requests, the server refuses at once, with
    ``transient`` (asked again later, the detail is served); an unknown id is refused for good."""
    with client.websocket_connect(WS) as ws:
        request = json.loads(run_msg("flood-1", SIN, exhibit="transpose"))
        ws.send_text(json.dumps(request | {"details": "on_demand"}))
        events = collect(ws, "flood-1")
        assert events[-1].type == "run_finished", events[-1]
        summary = next(e for e in events if e.detail_id is not None)
        ask = {"type": "detail", "run_id": "flood-1", "detail_id": summary.detail_id}
        sent = 4 * MAX_PENDING_DETAILS
        for _ in range(sent):
            ws.send_text(json.dumps(ask))
        answers = [next_event(ws) for _ in range(sent)]
        refused = [a for a in answers if isinstance(a, DetailFailed)]
        served = [a for a in answers if a.detail_of == summary.detail_id]
        assert len(refused) + len(served) == sent and refused and served
        assert all(r.transient and not r.gone for r in refused), refused[0]
        assert f"more than {MAX_PENDING_DETAILS}" in refused[0].message
        ws.send_text(json.dumps(ask))  # the flood is over: the same request is served
        again = next_event(ws)
        assert again.type == summary.type and again.detail_of == summary.detail_id
        ws.send_text(json.dumps(ask | {"detail_id": "no-such-detail"}))
        unknown = next_event(ws)
        assert isinstance(unknown, DetailFailed) and not unknown.transient and not unknown.gone
