"""Issue 3, durability: every item and state change is committed as it
happens; a server killed with SIGKILL mid-turn comes back with that turn
`failed` (`server_restarted`) and the session ready for new input. These tests
run their own `rebyte serve` processes (the `servers` fixture) on one data
directory."""

from __future__ import annotations

import signal
import sqlite3

import pytest

from harness import conforms
from scripted import NONE, STREAM_TIMEOUT, collect, only_turn, reply, send, types, wait_turn, wait_until


def kill_mid_turn(servers, model, first_step, settle=False):
    """Starts a server, runs a turn into `first_step` (a stall), kills the server with SIGKILL and starts a new
    one on the same data directory. Answers (new server's client, session id, turn id, events seen before).
    `settle`: read the session's items before the kill (a read waits for the engine's queued writes), so that
    what the stream delivered is on disk when the kill comes; see the xfail test at the end for why."""
    first = servers()
    c1 = first.client()
    sid = c1.beta.agents.sessions.create(environment=NONE, agent={"model": "gpt-test"}).id
    model.script(first_step, reply("back again"))
    with c1.beta.agents.sessions.events.stream(sid, timeout=STREAM_TIMEOUT) as stream:
        send(c1, sid, "hang")
        seen = collect(stream, lambda e: e.type == "agent.session.in_progress")
        wait_until(lambda: model.stats()["requests"] == 1, "the model request")
        if first_step.get("stall_after"):
            seen += collect(stream, lambda e: e.type == "agent.session.turn.output_text.delta")
        if settle:
            c1.beta.agents.sessions.items.list(sid)
        assert first.stop(signal.SIGKILL) == -signal.SIGKILL
    second = servers()
    return second.client(), sid, only_turn(second.client(), sid).id, seen


def test_a_turn_cut_by_sigkill_fails_with_server_restarted_and_the_session_takes_new_input(servers, model):
    client, sid, turn_id, seen = kill_mid_turn(servers, model, {"type": "stall"})
    assert types(seen) == [
        "agent.session.turn.created",
        "agent.session.turn.item.added",
        "agent.session.turn.in_progress",
        "agent.session.in_progress",
    ]
    # `server_restarted` is mandated by the issue and DESIGN §4 although it is not one of the client's
    # SessionTurnError.code literals; the client parses it leniently, so the turn is checked as JSON.
    turn = client.beta.agents.sessions.turns.retrieve(turn_id, session_id=sid).to_dict()
    assert turn == {
        "id": turn_id,
        "object": "agent.session.turn",
        "agent_id": "agent_inline",
        "session_id": sid,
        "status": "failed",
        "created_at": turn["created_at"],
        "started_at": turn["started_at"],
        "completed_at": turn["completed_at"],
        "error": {"code": "server_restarted", "message": "the server restarted while this turn was running"},
        "subagent_id": None,
        "usage": None,
        "prompt_cache_options": None,
    }
    assert turn["started_at"] is not None and turn["completed_at"] >= turn["started_at"]
    session = client.beta.agents.sessions.retrieve(sid)
    assert (session.status, session.required_actions) == ("idle", [])
    [user] = client.beta.agents.sessions.items.list(sid).data
    assert (user.role, user.content[0].text, user.turn_id) == ("user", "hang", turn_id), "committed before the crash"

    # The events written before the crash survive it, and the ending is on the stream after them.
    with client.beta.agents.sessions.events.stream(
        sid, extra_headers={"Last-Event-ID": seen[-1].event_id}, timeout=STREAM_TIMEOUT
    ) as stream:
        after = collect(stream, lambda e: e.type == "agent.session.idle")
    assert types(after) == ["error", "agent.session.turn.failed", "agent.session.idle"]
    assert after[0].error.code == "server_restarted"
    assert after[1].turn.to_dict() == turn

    with client.beta.agents.sessions.stream(sid, input="again", timeout=STREAM_TIMEOUT) as stream:
        result = stream.get_final_result()
    assert result.output_text == "back again"
    assert [m["content"] for m in model.bodies()[-1]["messages"]] == ["hang", "again"]


def test_a_partial_answer_cut_by_sigkill_is_kept_as_an_incomplete_item(servers, model):
    """Issue 3: "every item and state change is committed as it happens"; after a restart no item of a failed
    turn stays in progress, and the partial answer keeps the text that was streamed before the crash."""
    client, sid, turn_id, seen = kill_mid_turn(
        servers, model, reply("partial answer", chunks=2, stall_after=2), settle=True
    )
    assert types(seen)[-2:] == ["agent.session.turn.item.added", "agent.session.turn.output_text.delta"]
    streamed = "".join(e.delta for e in seen if e.type == "agent.session.turn.output_text.delta")
    assert streamed == "partial", "the model sent the role frame and one delta ('partial') before stalling"
    assert wait_turn(client, sid, turn_id).status == "failed"
    user, partial = client.beta.agents.sessions.turns.items.list(turn_id, session_id=sid, order="asc").data
    assert (partial.role, partial.status, partial.id) == ("assistant", "incomplete", seen[-2].item.id)
    assert [c.text for c in partial.content] == [streamed]
    assert client.beta.agents.sessions.items.list(sid, order="asc").data[1].to_dict() == partial.to_dict()
    # The same item through the Responses API: a failed response whose message is incomplete.
    resp = client.responses.retrieve(f"resp_{turn_id}")
    assert (resp.status, resp.error.code) == ("failed", "server_error")
    assert [(o.id, o.status) for o in resp.output] == [(partial.id, "incomplete")]
    assert resp.output_text == streamed


def test_a_partial_answer_cut_by_sigkill_is_closed_on_the_event_stream(servers, model):
    """The live path (a stream cut by the provider) closes the item with `output_text.done` and `item.done`
    (status incomplete) before `turn.failed`; recovery ends the stream the same way."""
    client, sid, turn_id, seen = kill_mid_turn(
        servers, model, reply("partial answer", chunks=2, stall_after=2), settle=True
    )
    added, delta = seen[-2:]
    with client.beta.agents.sessions.events.stream(
        sid, extra_headers={"Last-Event-ID": delta.event_id}, timeout=STREAM_TIMEOUT
    ) as stream:
        after = collect(stream, lambda e: e.type == "agent.session.idle")
    assert types(after) == [
        "agent.session.turn.output_text.done",
        "agent.session.turn.item.done",
        "error",
        "agent.session.turn.failed",
        "agent.session.idle",
    ]
    text_done, item_done = after[:2]
    conforms(text_done)
    conforms(item_done)
    assert (text_done.item_id, text_done.output_index, text_done.content_index, text_done.text) == (
        added.item.id, added.output_index, 0, "partial"
    ), "the text that was streamed before the crash"
    assert (item_done.turn_id, item_done.output_index) == (turn_id, added.output_index)
    stored = client.beta.agents.sessions.turns.items.list(turn_id, session_id=sid, order="asc").data[1]
    assert item_done.item.to_dict() == stored.to_dict(), "the stored incomplete item, as announced"
    assert stored.status == "incomplete"


def kill_with_uncommitted_events(servers, model):
    """Runs a turn until the model's first delta is delivered while the test holds the database locked (as a slow
    disk or a busy checkpoint would), then kills the server with SIGKILL and starts a new one. The lock makes the
    window between delivery and commit deterministic. Answers (new server's client, session id, the events seen
    before the lock (all committed), the events delivered while it was held)."""
    first = servers()
    c1 = first.client()
    sid = c1.beta.agents.sessions.create(environment=NONE, agent={"model": "gpt-test"}).id
    model.script(reply("partial answer", chunks=2, stall_after=2, latency_ms=1000), reply("back again"))
    lock = sqlite3.connect(first.data_dir / "rebyte.db", timeout=10, isolation_level=None)
    try:
        with c1.beta.agents.sessions.events.stream(sid, timeout=STREAM_TIMEOUT) as stream:
            send(c1, sid, "hang")
            seen = collect(stream, lambda e: e.type == "agent.session.in_progress")
            wait_until(lambda: model.stats()["requests"] == 1, "the model request")
            c1.beta.agents.sessions.items.list(sid)  # everything so far is on disk
            lock.execute("BEGIN IMMEDIATE")
            delivered = collect(stream, lambda e: e.type == "agent.session.turn.output_text.delta")
            assert first.stop(signal.SIGKILL) == -signal.SIGKILL
    finally:
        if lock.in_transaction:
            lock.execute("ROLLBACK")
        lock.close()
    assert types(delivered) == ["agent.session.turn.item.added", "agent.session.turn.output_text.delta"]
    return servers().client(), sid, seen, delivered


def test_an_event_id_a_client_saw_is_never_handed_out_again_after_a_sigkill(servers, model):
    """DESIGN §4: the stream replays from Last-Event-ID. A client that resumes from the last id it received, even
    one whose event did not survive the crash, gets the turn's ending, under ids it has never seen."""
    client, sid, seen, delivered = kill_with_uncommitted_events(servers, model)
    with client.beta.agents.sessions.events.stream(
        sid, extra_headers={"Last-Event-ID": delivered[-1].event_id}, timeout=STREAM_TIMEOUT
    ) as stream:
        after = collect(stream, lambda e: e.type == "agent.session.idle")
    assert types(after) == ["error", "agent.session.turn.failed", "agent.session.idle"]
    assert after[0].error.code == "server_restarted"
    old = [e.event_id for e in seen + delivered]
    new = [e.event_id for e in after]
    assert not set(new) & set(old), "no id is reused"
    assert sorted(old) == old and sorted(new) == new and new[0] > old[-1], "ids keep growing across the restart"


@pytest.mark.xfail(
    reason="server bug: events reach the stream before they are committed (engine record.rs emit publishes at once; "
    "items and events go through the journal's write-behind queue, journal.rs), so after a SIGKILL the restarted "
    "server has lost events a client already received — here the message's `item.added` and its `output_text.delta`: "
    "resuming from the last committed event replays only [error, turn.failed, idle] (no `item.done` ever closes the "
    "delivered in_progress message), and the delivered message item is gone from the turn's items (only the user "
    "message is left). Their ids are no longer handed out again (see the test above)",
    strict=True,
)
def test_every_event_the_stream_delivered_survives_a_sigkill(servers, model):
    """Issue 3: "every item and state change is committed as it happens"; DESIGN §4: the stream replays from
    Last-Event-ID."""
    client, sid, seen, delivered = kill_with_uncommitted_events(servers, model)
    with client.beta.agents.sessions.events.stream(
        sid, extra_headers={"Last-Event-ID": seen[-1].event_id}, timeout=STREAM_TIMEOUT
    ) as stream:
        replayed = collect(stream, lambda e: e.type == "agent.session.idle")
    assert [(e.event_id, e.type) for e in replayed[:2]] == [(e.event_id, e.type) for e in delivered]
    turn_id = only_turn(client, sid).id
    items = client.beta.agents.sessions.turns.items.list(turn_id, session_id=sid, order="asc").data
    assert [i.id for i in items][1:] == [delivered[0].item.id]
