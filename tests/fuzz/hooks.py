"""schemathesis hooks of the fuzz run (loaded through SCHEMATHESIS_HOOKS by run.py).

The server's document describes an event stream (`text/event-stream`) by the
schema of each event's `data:` (crates/server/src/openapi/op.rs, `Op::stream`);
OpenAPI 3.0 has no word for that, and schemathesis reads such a schema as
describing the frame `{event, data, id}` instead. This deserializer hands it
what the document means: the stream as the list of its events' `data:`, each
parsed as JSON, so that every event is checked against the schema.
"""

from __future__ import annotations

import json
import re
from typing import Any

import schemathesis

LINE_END = re.compile(r"\r\n|\r|\n")


@schemathesis.deserializer("text/event-stream")
def event_data(_ctx: Any, response: Any) -> list[Any]:
    """Each event's `data:` lines (joined with newlines), parsed as JSON; comments and keep-alives skipped."""
    events: list[Any] = []
    data: list[str] = []
    for line in LINE_END.split(response.content.decode("utf-8").removeprefix("\ufeff")) + [""]:
        if line == "":
            if data:
                events.append(json.loads("\n".join(data)))
            data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    return events
