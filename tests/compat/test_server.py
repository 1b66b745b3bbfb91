"""`rebyte serve` itself: first start, bootstrap key, restart with the same
data directory, graceful shutdown, the body limit flag, and the operations
endpoints."""

from __future__ import annotations

import signal
import stat

import openai
import pytest
from openai import OpenAI

from harness import Server, conforms, new_key, raw


@pytest.fixture
def own_server():
    """Servers this test starts; each is stopped and its directory removed afterwards."""
    started: list[Server] = []

    def start(**kwargs) -> Server:
        srv = Server(**kwargs).start()
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()
    for srv in started:
        srv.cleanup()


def test_first_start_without_a_key_prints_one_and_writes_it_with_mode_0600(own_server):
    """Issue 2: "bootstraps the organization `default` and a key (… or generated, printed once and written to
    `<data-dir>/bootstrap-key` with mode 0600)"."""
    srv = own_server()
    key_file = srv.data_dir / "bootstrap-key"
    secret = key_file.read_text().strip()
    assert secret.startswith("rbk_") and len(secret) >= 36
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert secret in srv.banner, "printed once on stdout"
    with srv.client(secret) as c:
        assert c.beta.agents.create(model="gpt-test").object == "agent"
    assert srv.stop() == 0
    again = own_server(data_dir=srv.data_dir)
    assert not any(line.startswith("rbk_") for line in again.banner), "a second start prints no key"
    with again.client(secret) as c:
        assert len(c.beta.agents.list().data) == 1


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_shuts_down_gracefully_and_keeps_everything_across_a_restart(own_server, sig):
    """Issue 2: "shuts down gracefully on SIGINT/SIGTERM"; the SQLite store lives in the data directory."""
    key = new_key()
    first = own_server(bootstrap_key=key)
    with first.client() as c:
        agent = conforms(c.beta.agents.create(model="gpt-test", name="durable ✓", metadata={"k": "v"}))
        session = conforms(c.beta.agents.sessions.create(environment={"type": "none"}, agent_id=agent["id"]))
        conv = conforms(c.conversations.create(metadata={"c": "1"}))
    assert first.stop(sig) == 0
    second = own_server(data_dir=first.data_dir, bootstrap_key=key)
    with second.client() as c:
        assert conforms(c.beta.agents.retrieve(agent["id"])) == agent
        assert conforms(c.beta.agents.sessions.retrieve(session["id"])) == session
        assert conforms(c.conversations.retrieve(conv["id"])) == conv


def test_open_event_streams_do_not_hold_up_a_graceful_shutdown(own_server):
    """Issue 17 ("a stuck server"): a client holding a session's standing
    event stream open must not keep SIGTERM from stopping the server (axum's
    graceful shutdown waits for open connections; the streams end first)."""
    import time

    srv = own_server(bootstrap_key=new_key())
    with srv.client() as c:
        session = c.beta.agents.sessions.create(environment={"type": "none"}, agent={"model": "gpt-test"})
        with c.beta.agents.sessions.events.stream(session.id, timeout=30) as stream:
            began = time.monotonic()
            assert srv.stop(signal.SIGTERM) == 0, "the server was killed after not stopping on SIGTERM"
            assert time.monotonic() - began < 10
            try:
                for _ in stream:
                    pass
            except openai.APIError:
                pass  # the stream ended with the connection, as it should


def test_the_body_limit_flag_sets_the_413_threshold(own_server):
    srv = own_server(bootstrap_key=new_key(), extra_args=["--body-limit", "4096"])
    with srv.client() as c:
        assert c.beta.agents.create(model="gpt-test", instructions="x" * 3000).instructions == "x" * 3000
        with pytest.raises(openai.APIStatusError) as e:
            c.beta.agents.create(model="gpt-test", instructions="x" * 5000)
        assert e.value.status_code == 413
        assert len(c.beta.agents.list().data) == 1


def test_healthz_and_readyz_answer_200(url):
    assert raw("GET", url + "/healthz", None).status_code == 200
    assert raw("GET", url + "/readyz", None).status_code == 200


def test_metrics_count_requests_and_latency_by_route_and_status(url, client: OpenAI):
    """Issue 2: "`/metrics` (Prometheus text: request counts and latency histograms by route and status)"."""
    client.beta.agents.list()
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.retrieve("agent_" + "0" * 32)
    r = raw("GET", url + "/metrics", None)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    lines = r.text.splitlines()
    assert any(
        l.startswith("rebyte_http_requests_total{") and 'route="/v1/agents/{agent_id}"' in l and 'status="404"' in l
        for l in lines
    )
    assert any("_bucket{" in l and 'route="/v1/agents"' in l and 'le="' in l for l in lines), "a latency histogram"
