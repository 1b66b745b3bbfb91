"""Issue 15, item 2: structured output reaches the model. An agent's or
session's `text.format` (the client's `output_type=`) and a response's
`text.format` (`responses.parse(text_format=…)`) go to the provider as Chat
Completions `response_format`, and the client parses the answer; a schema
that is no JSON Schema is a 400 naming the field."""

from __future__ import annotations

import openai
import pytest
from pydantic import BaseModel

from harness import error_of
from scripted import NONE, STREAM_TIMEOUT, reply


class City(BaseModel):
    name: str
    population: int


ANSWER = '{"name": "Lyon", "population": 522000}'


def test_a_session_output_type_reaches_the_model_and_the_result_is_parsed(client, model):
    model.script(reply(ANSWER))
    with client.beta.agents.sessions.create(environment=NONE, agent={"model": "gpt-test"}, input="A French city",
                                            stream=True, output_type=City, timeout=STREAM_TIMEOUT) as stream:
        result = stream.get_final_result()
    assert result.output_parsed == City(name="Lyon", population=522000)
    sent = model.bodies()[-1]["response_format"]
    assert (sent["type"], sent["json_schema"]["strict"]) == ("json_schema", True)
    assert sent["json_schema"]["schema"]["properties"].keys() == {"name", "population"}


def test_responses_parse_sends_the_format_and_returns_the_parsed_object(client, model):
    model.script(reply(ANSWER))
    parsed = client.responses.parse(model="gpt-test", input="A French city", text_format=City,
                                    temperature=0.3, max_output_tokens=200)
    assert parsed.output_parsed == City(name="Lyon", population=522000)
    body = model.bodies()[-1]
    assert body["response_format"]["json_schema"]["name"] == "City"
    assert body["max_completion_tokens"] == 200
    stored = client.responses.retrieve(parsed.id)
    assert (stored.text.format.type, stored.temperature, stored.max_output_tokens) == ("json_schema", 0.3, 200)


def test_a_format_that_is_no_json_schema_is_a_400_naming_the_field(client, model):
    with pytest.raises(openai.BadRequestError) as e:
        client.beta.agents.create(model="gpt-test",
                                  text={"format": {"type": "json_schema", "schema": {"type": "no-such-type"}}})
    assert error_of(e.value)["param"] == "text.format.schema"
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model="gpt-test", input="x", text={"format": {
            "type": "json_schema", "name": "bad", "schema": {"properties": 3}}})
    err = error_of(e.value)
    assert err["param"] == "text.format.schema" and "not a valid JSON Schema" in err["message"]
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model="gpt-test", input="x", temperature=7)
    assert error_of(e.value)["param"] == "temperature"
    assert model.bodies() == []
