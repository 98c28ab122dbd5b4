"""The incident JSON block external agents end their answer with (the paper's adapter)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pytest_marathon.agents.incident_block import parse_incident_block

incidents = st.lists(
    st.fixed_dictionaries(
        {
            "incident_id": st.from_regex(r"[a-z0-9-]{1,12}", fullmatch=True),
            "alert_ids": st.lists(st.from_regex(r"a-[0-9a-f]{10}", fullmatch=True), max_size=4),
            "status": st.sampled_from(["open", "mitigated", "resolved"]),
            "root_cause": st.fixed_dictionaries(
                {"culprits": st.lists(st.sampled_from(["cartservice", "frontend"]), max_size=2), "text": st.text(max_size=30)}
            ),
        }
    ),
    max_size=5,
)
prose = st.text(alphabet=st.characters(blacklist_characters="`{}[]"), max_size=80)


@given(incidents, prose, st.booleans())
def test_the_final_block_is_read_back_exactly_fenced_or_bare(items, text, fenced):
    block = json.dumps({"incidents": items}, indent=1)
    answer = f"{text}\n```json\n{block}\n```\n" if fenced else f"{text}\n{block}"
    assert parse_incident_block(answer) == items


def test_only_the_last_block_counts_and_unknown_keys_are_dropped():
    answer = (
        'First idea:\n```json\n{"incidents": [{"incident_id": "old"}]}\n```\nOn reflection:\n'
        '```json\n[{"incident_id": "inc-1", "alert_ids": ["a-1"], "repair": "rollback"}]\n```'
    )
    assert parse_incident_block(answer) == [{"incident_id": "inc-1", "alert_ids": ["a-1"]}]


@pytest.mark.parametrize(
    "answer, message",
    [
        ("", "no answer"),
        ("I looked around and everything is fine.", "does not end with an incident JSON block"),
        ("```json\n{\"incidents\": [\n```", "not valid JSON"),
        ('{"incidents": {"incident_id": "x"}}', "must be"),
        ('{"incidents": [{"alert_ids": []}]}', "incident_id"),
    ],
)
def test_malformed_answers_say_what_is_wrong(answer, message):
    with pytest.raises(ValueError, match=message):
        parse_incident_block(answer)
