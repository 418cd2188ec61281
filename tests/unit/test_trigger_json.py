"""The one reader of a stored trigger (``actors/store/trigger_json.py``)."""

from __future__ import annotations

import json

import pytest

from actors.store.trigger_json import StoredTrigger, decode_trigger


@pytest.mark.parametrize(
    ("text", "decoded"),
    [
        ('{"once":true}', StoredTrigger(kind="once")),
        ('{"once":true,"wall":true}', StoredTrigger(kind="once", wall=True)),
        ('{"rate": 10.0, "anchor": 1.5}', StoredTrigger(kind="rate", rate=10.0, anchor=1.5)),
        ('{"delay": 30}', StoredTrigger(kind="delay", delay=30)),
        ('{"cron": "@daily", "tz": "UTC"}', StoredTrigger(kind="cron", cron="@daily", tz="UTC")),
    ],
)
def test_every_form_the_store_writes_decodes_to_its_fields(text: str, decoded: StoredTrigger) -> None:
    assert decode_trigger(text) == decoded


@pytest.mark.parametrize(
    ("text", "error", "words"),
    [
        ("not json", json.JSONDecodeError, "Expecting value"),
        ("[1]", TypeError, "not an object"),
        ('{"something": "new"}', ValueError, "names 0 of the kinds"),
        ('{"rate": 1, "delay": 1}', ValueError, "names 2 of the kinds"),
        ('{"once": false}', ValueError, "not true"),
        ('{"once": true, "wall": 1}', TypeError, "'wall'"),
        ('{"rate": "1", "anchor": 0}', TypeError, "'rate'"),
        ('{"rate": 1}', KeyError, "anchor"),
        ('{"rate": 1, "anchor": NaN}', ValueError, "anchor"),
        ('{"cron": 5, "tz": "UTC"}', TypeError, "'cron'"),
    ],
)
def test_a_trigger_not_of_ours_raises_the_documented_error(
    text: str, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        decode_trigger(text)
