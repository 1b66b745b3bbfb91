"""Issue 10, point 6: `GET /v1/openapi.json` is a valid OpenAPI 3.0 document (openapi-spec-validator), every
operation has an id and a tag, and real answers — through the official client and raw HTTP — come with a status the
document declares for that operation and a body its schema for that status and content type accepts."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from openapi_schema_validator import OAS30Validator
from openapi_spec_validator import validate

from harness import raw
from scripted import NONE, reply, wait_until


@pytest.fixture(scope="module")
def doc(url: str) -> dict[str, Any]:
    r = raw("GET", url + "/v1/openapi.json", None)
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    return r.json()


def declared(doc: dict[str, Any], method: str, path: str, response: httpx2.Response) -> dict[str, Any] | None:
    """Checks `response` against the document's `method path`: its status is declared, and its body fits the schema
    of its content type (JSON bodies only). Answers the body, or None when there is none."""
    op = doc["paths"][path][method]
    status = str(response.status_code)
    assert status in op["responses"], f"{method} {path} answered {status}, declared {sorted(op['responses'])}"
    spec = op["responses"][status]
    if "$ref" in spec:
        spec = doc["components"]["responses"][spec["$ref"].rsplit("/", 1)[-1]]
    if not response.content:
        assert "content" not in spec, f"{method} {path} {status} declares a body and sent none"
        return None
    content_type = response.headers["content-type"].split(";")[0]
    assert content_type in spec.get("content", {}), f"{method} {path} {status} answered {content_type}"
    body = response.json()
    schema = {**spec["content"][content_type]["schema"], "components": doc["components"]}
    OAS30Validator(schema).validate(body)
    return body


def test_the_document_is_valid_openapi_with_an_id_and_a_tag_on_every_operation(doc):
    validate(doc)
    assert doc["openapi"] == "3.0.3"
    tags = {t["name"] for t in doc["tags"]}
    ids = []
    for path, item in doc["paths"].items():
        for method, op in item.items():
            ids.append(op["operationId"])
            assert op["tags"] and set(op["tags"]) <= tags, (method, path)
    assert len(ids) == len(set(ids)), "operationIds are unique"
    for path in ("/v1/agents", "/v1/agents/sessions/{session_id}/events", "/v1/responses", "/healthz"):
        assert path in doc["paths"], path


def test_a_schema_that_breaks_openapi_is_caught(doc):
    """The validator really looks at schemas: `const` and type arrays are not OpenAPI 3.0."""
    broken = {**doc, "components": {**doc["components"], "schemas": {**doc["components"]["schemas"]}}}
    broken["components"]["schemas"]["ErrorBody"] = {"type": ["object", "null"], "const": 1}
    with pytest.raises(Exception):
        validate(broken)


def test_real_answers_have_the_declared_statuses_and_schemas(doc, url, client, bootstrap_key, model):
    model.script(reply("Hello from the model."))
    r = client.beta.agents.with_raw_response.create(model="gpt-test", instructions="Be brief.")
    agent = declared(doc, "post", "/v1/agents", r.http_response)
    assert agent is not None and agent["id"] == r.parse().id
    declared(doc, "get", "/v1/agents", client.beta.agents.with_raw_response.list().http_response)
    declared(doc, "get", "/v1/agents/{agent_id}", client.beta.agents.with_raw_response.retrieve(agent["id"]).http_response)

    r = client.beta.agents.environments.with_raw_response.create(environment={"type": "openai_hosted"})
    assert r.status_code == 201
    env = declared(doc, "post", "/v1/agents/environments", r.http_response)
    r = client.beta.agents.environments.with_raw_response.retrieve(env["id"])
    declared(doc, "get", "/v1/agents/environments/{environment_id}", r.http_response)

    r = client.beta.agents.sessions.with_raw_response.create(agent_id=agent["id"], environment=NONE)
    session = declared(doc, "post", "/v1/agents/sessions", r.http_response)
    events = f"{url}/v1/agents/sessions/{session['id']}/events"
    message = {"type": "agent.session.input.message",
               "input": [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]}]}
    r = raw("POST", events, bootstrap_key, json={"events": [message]})
    assert r.status_code == 202 and declared(doc, "post", "/v1/agents/sessions/{session_id}/events", r) is None
    turns = wait_until(lambda: [t for t in client.beta.agents.sessions.turns.list(session["id"]).data
                                if t.status == "completed"], "the turn completes")
    r = client.beta.agents.sessions.turns.with_raw_response.list(session["id"])
    declared(doc, "get", "/v1/agents/sessions/{session_id}/turns", r.http_response)
    r = raw("GET", f"{url}/v1/agents/sessions/{session['id']}/turns/{turns[0].id}/items", bootstrap_key)
    items = declared(doc, "get", "/v1/agents/sessions/{session_id}/turns/{turn_id}/items", r)
    assert [i["type"] for i in items["data"]] == ["message", "message"]

    r = client.conversations.with_raw_response.retrieve(f"conv_{session['id']}")
    declared(doc, "get", "/v1/conversations/{conversation_id}", r.http_response)
    r = client.conversations.items.with_raw_response.list(f"conv_{session['id']}")
    declared(doc, "get", "/v1/conversations/{conversation_id}/items", r.http_response)
    r = client.responses.with_raw_response.retrieve(f"resp_{turns[0].id}")
    response = declared(doc, "get", "/v1/responses/{response_id}", r.http_response)
    assert response["output"][0]["content"][0]["text"] == "Hello from the model."

    # Errors: the declared status, with the ErrorBody schema.
    r = raw("GET", f"{url}/v1/agents/agent_{'0' * 32}", bootstrap_key)
    assert r.status_code == 404 and declared(doc, "get", "/v1/agents/{agent_id}", r)["error"]["code"] == "not_found"
    r = raw("POST", f"{url}/v1/agents", None, json={"model": "gpt-test"})
    assert r.status_code == 401 and declared(doc, "post", "/v1/agents", r)
    r = raw("POST", events, bootstrap_key, json={"events": []})
    assert r.status_code == 400 and declared(doc, "post", "/v1/agents/sessions/{session_id}/events", r)

    r = raw("GET", url + "/healthz", None)
    assert declared(doc, "get", "/healthz", r) == {"status": "ok"}
    r = raw("DELETE", f"{url}/v1/agents/sessions/{session['id']}", bootstrap_key)
    declared(doc, "delete", "/v1/agents/sessions/{session_id}", r)
    r = raw("DELETE", f"{url}/v1/agents/environments/{env['id']}", bootstrap_key)
    declared(doc, "delete", "/v1/agents/environments/{environment_id}", r)
